package dashboard

import (
	"errors"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/paygate/paygate/internal/paygate"
)

// The card-testing guard's settings page (issue 23, decisions §20): owners
// and admins see and change the four rules of the mode; every change is
// stored with its audit entry in one unit. The payment path reads the
// settings on every attempt, so a change takes effect on the next payment
// on every node.

// guardRuleInfo says in words what each rule counts.
var guardRuleInfo = map[paygate.GuardRule]string{
	paygate.GuardCardIP:   "Declines of one card from one address (the shopper's billing.ipAddress, or the client address).",
	paygate.GuardCard:     "Declines of one card, whoever pays with it.",
	paygate.GuardCustomer: "Declines of one customerId.",
	paygate.GuardIPCards:  "Distinct declined cards from one address (the shopper's billing.ipAddress, or the client address).",
}

// guardRow is one rule's form on the page: its values as shown (or as
// typed, after an error).
type guardRow struct {
	Rule                     paygate.GuardRule
	About                    string
	Enabled                  bool
	Threshold, Window, Block string
	// Default is the rule's default, in words.
	Default string
	Error   string
}

// guardData is the guard page.
type guardData struct {
	Rows          []guardRow
	Error, Notice string
}

// guardRow makes a rule's row from its settings.
func newGuardRow(mode paygate.Mode, s paygate.GuardRuleSettings) guardRow {
	def := paygate.DefaultGuardRule(mode, s.Rule)
	state := "off"
	if def.Enabled {
		state = "on"
	}
	return guardRow{Rule: s.Rule, About: guardRuleInfo[s.Rule], Enabled: s.Enabled,
		Threshold: strconv.Itoa(s.Threshold), Window: shortDuration(s.Window), Block: shortDuration(s.Block),
		Default: state + ", " + strconv.Itoa(def.Threshold) + " in " + shortDuration(def.Window) + ", block " + shortDuration(def.Block)}
}

// shortDuration writes a duration as a person types it: 1h, 10m, 1h30m.
func shortDuration(d time.Duration) string {
	s := d.String()
	if strings.HasSuffix(s, "m0s") {
		s = strings.TrimSuffix(s, "0s")
	}
	if strings.HasSuffix(s, "h0m") {
		s = strings.TrimSuffix(s, "0m")
	}
	return s
}

// loadGuard reads the mode's rules into the page.
func (d *Dashboard) loadGuard(r *http.Request, v *viewer) (guardData, error) {
	set, err := d.store.GuardSettings(r.Context(), v.User.MerchantID, v.Mode)
	if err != nil {
		return guardData{}, err
	}
	var data guardData
	for _, s := range set.Rules {
		data.Rows = append(data.Rows, newGuardRow(v.Mode, s))
	}
	return data, nil
}

// guardPage serves GET /guard.
func (d *Dashboard) guardPage(w http.ResponseWriter, r *http.Request, v *viewer, _ []string) {
	data, err := d.loadGuard(r, v)
	if err != nil {
		d.fail(w, r, v, err)
		return
	}
	if rule := r.URL.Query().Get("done"); rule != "" {
		for _, k := range paygate.GuardRules {
			if string(k) == rule {
				data.Notice = "Rule " + rule + " was saved. It applies from the next payment, on every node."
			}
		}
	}
	d.render(w, r, v, http.StatusOK, "guard", data)
}

// setGuard serves POST /guard: one rule's settings (fields rule, enabled,
// threshold, window, block). Invalid values show the page again with the
// error (400); a valid change is stored with its audit entry in one unit.
func (d *Dashboard) setGuard(w http.ResponseWriter, r *http.Request, v *viewer, _ []string) {
	data, err := d.loadGuard(r, v)
	if err != nil {
		d.fail(w, r, v, err)
		return
	}
	rule := paygate.GuardRule(r.PostFormValue("rule"))
	row := -1
	for i := range data.Rows {
		if data.Rows[i].Rule == rule {
			row = i
		}
	}
	if row < 0 {
		data.Error = "Choose one of the rules below."
		d.render(w, r, v, http.StatusBadRequest, "guard", data)
		return
	}
	// Show what was typed if it is refused.
	typed := &data.Rows[row]
	typed.Enabled = r.PostFormValue("enabled") == "on"
	typed.Threshold = strings.TrimSpace(r.PostFormValue("threshold"))
	typed.Window = strings.TrimSpace(r.PostFormValue("window"))
	typed.Block = strings.TrimSpace(r.PostFormValue("block"))
	s, err := parseGuardRow(*typed)
	if err == nil {
		err = s.Validate()
	}
	if err != nil {
		msg := err.Error()
		var pe *paygate.Error
		if errors.As(err, &pe) {
			msg = pe.Message
		}
		typed.Error = capitalize(msg) + "."
		data.Error = "Rule " + string(rule) + " was not saved: " + msg + "."
		d.render(w, r, v, http.StatusBadRequest, "guard", data)
		return
	}
	now := d.now()
	ch := paygate.GuardChange{MerchantID: v.User.MerchantID, Mode: v.Mode, Settings: s, At: now}
	e := paygate.AuditEntry{ID: newID(), MerchantID: v.User.MerchantID, UserID: v.User.ID, Email: v.User.Email,
		Action: paygate.AuditGuardChanged, Target: string(rule), Detail: ch.Describe(),
		RemoteAddr: clientAddr(r), CreatedAt: now}
	if err := d.store.Commit(r.Context(), paygate.Unit{Ops: []paygate.Op{ch, e}}); err != nil {
		d.fail(w, r, v, err)
		return
	}
	http.Redirect(w, r, modePath(v, "/guard")+"?done="+string(rule), http.StatusSeeOther)
}

// parseGuardRow reads a rule's settings from what was typed; the bounds
// are GuardRuleSettings.Validate's.
func parseGuardRow(row guardRow) (paygate.GuardRuleSettings, error) {
	s := paygate.GuardRuleSettings{Rule: row.Rule, Enabled: row.Enabled}
	n, err := strconv.Atoi(row.Threshold)
	if err != nil {
		return s, paygate.Errorf(paygate.CodeInvalidRequest, "threshold", "threshold must be a whole number")
	}
	s.Threshold = n
	if s.Window, err = time.ParseDuration(row.Window); err != nil {
		return s, paygate.Errorf(paygate.CodeInvalidRequest, "window", "window must be a duration such as 10m or 1h")
	}
	if s.Block, err = time.ParseDuration(row.Block); err != nil {
		return s, paygate.Errorf(paygate.CodeInvalidRequest, "block", "block must be a duration such as 30m or 1h")
	}
	return s, nil
}
