package dashboard

import "github.com/paygate/paygate/internal/paygate"

// moreAuditLabels word the actions issues 22 and 23 added (the team, MFA,
// capture and void, the guard), which audit.go's auditLabels lacked: the
// audit log showed them as stored (user.mfa_enabled) and its filter
// refused them. A label auditLabels already has is kept.
var moreAuditLabels = map[string]string{
	paygate.AuditPaymentCaptured:   "Payment captured",
	paygate.AuditPaymentVoided:     "Payment voided",
	paygate.AuditUserCreated:       "User created",
	paygate.AuditUserRoleChanged:   "Role changed",
	paygate.AuditUserPasswordReset: "Password reset",
	paygate.AuditUserDisabled:      "User disabled",
	paygate.AuditUserUnlocked:      "User unlocked",
	paygate.AuditUserLocked:        "User locked out",
	paygate.AuditUserInvited:       "User invited",
	paygate.AuditUserRemoved:       "User removed",
	paygate.AuditUserMFAEnabled:    "Two-step sign-in turned on",
	paygate.AuditUserMFADisabled:   "Two-step sign-in turned off",
	paygate.AuditInvitationRevoked: "Invitation revoked",
	paygate.AuditGuardChanged:      "Guard rule changed",
}

func init() {
	for a, l := range moreAuditLabels {
		if _, ok := auditLabels[a]; !ok {
			auditLabels[a] = l
		}
	}
}
