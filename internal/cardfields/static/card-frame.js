/*
 * paygate card fields: the script of the frame /js/v1/card-frame.html.
 *
 * The frame lives on the gateway's origin. It talks only to the page that
 * embeds it, whose origin the gateway checked and wrote in
 * <html data-parent>: it posts to that origin alone (never to any origin) and reads
 * only messages from window.parent with that origin. The card number and
 * the security code never leave this frame except in the POST to
 * /v1/tokens on the gateway's own origin; the page hears the brand,
 * whether each field is valid, and the token (whose card.last4 is the only
 * digits of the number it ever learns).
 *
 * Messages to the page: {paygate: 1, type: 'ready' | 'change' | 'resize' |
 * 'submit' | 'token' | 'error', ...}. From the page: {paygate: 1, type:
 * 'style' | 'tokenize' | 'focus' | 'clear', ...}.
 */
(function () {
  'use strict';

  var root = document.documentElement;
  var parentOrigin = root.getAttribute('data-parent');
  var publicKey = root.getAttribute('data-key');
  if (!parentOrigin || !publicKey || window.parent === window) {
    return;
  }

  // ---- words, in the language the gateway rendered the frame in ----

  var words = {
    en: {
      enter_number: 'Enter the card number.',
      incomplete_number: 'The card number is incomplete.',
      invalid_number: 'The card number is not valid.',
      enter_expiry: 'Enter the expiry date.',
      incomplete_expiry: 'The expiry date is incomplete (MM / YY).',
      invalid_month: 'The expiry month must be 01 to 12.',
      expired_card: 'The card has expired.',
      far_expiry: 'The expiry year is too far ahead.',
      enter_cvc: 'Enter the security code.',
      cvc_amex: 'The security code is the 4 digits on the front of the card.',
      cvc_3: 'The security code is 3 digits.',
      enter_name: 'Enter the name on the card.',
      long_name: 'The name is too long.',
      not_saved: 'The card could not be saved.',
      rate_limited: 'Too many attempts. Please wait a minute and try again.',
      network: 'The payment service could not be reached. Check your connection and try again.',
      busy: 'A token is already being created.'
    },
    fr: {
      enter_number: 'Saisissez le numéro de carte.',
      incomplete_number: 'Le numéro de carte est incomplet.',
      invalid_number: 'Le numéro de carte n\u2019est pas valide.',
      enter_expiry: 'Saisissez la date d\u2019expiration.',
      incomplete_expiry: 'La date d\u2019expiration est incomplète (MM / AA).',
      invalid_month: 'Le mois d\u2019expiration doit être entre 01 et 12.',
      expired_card: 'La carte a expiré.',
      far_expiry: 'L\u2019année d\u2019expiration est trop lointaine.',
      enter_cvc: 'Saisissez le code de sécurité.',
      cvc_amex: 'Le code de sécurité est formé des 4 chiffres au recto de la carte.',
      cvc_3: 'Le code de sécurité compte 3 chiffres.',
      enter_name: 'Saisissez le nom figurant sur la carte.',
      long_name: 'Le nom est trop long.',
      not_saved: 'La carte n\u2019a pas pu être enregistrée.',
      rate_limited: 'Trop de tentatives. Patientez une minute puis réessayez.',
      network: 'Le service de paiement est injoignable. Vérifiez votre connexion et réessayez.',
      busy: 'Un jeton est déjà en cours de création.'
    },
    de: {
      enter_number: 'Geben Sie die Kartennummer ein.',
      incomplete_number: 'Die Kartennummer ist unvollständig.',
      invalid_number: 'Die Kartennummer ist ungültig.',
      enter_expiry: 'Geben Sie das Ablaufdatum ein.',
      incomplete_expiry: 'Das Ablaufdatum ist unvollständig (MM / JJ).',
      invalid_month: 'Der Ablaufmonat muss zwischen 01 und 12 liegen.',
      expired_card: 'Die Karte ist abgelaufen.',
      far_expiry: 'Das Ablaufjahr liegt zu weit in der Zukunft.',
      enter_cvc: 'Geben Sie den Sicherheitscode ein.',
      cvc_amex: 'Der Sicherheitscode besteht aus den 4 Ziffern auf der Vorderseite der Karte.',
      cvc_3: 'Der Sicherheitscode hat 3 Ziffern.',
      enter_name: 'Geben Sie den Namen auf der Karte ein.',
      long_name: 'Der Name ist zu lang.',
      not_saved: 'Die Karte konnte nicht gespeichert werden.',
      rate_limited: 'Zu viele Versuche. Bitte warten Sie eine Minute und versuchen Sie es erneut.',
      network: 'Der Zahlungsdienst ist nicht erreichbar. Prüfen Sie Ihre Verbindung und versuchen Sie es erneut.',
      busy: 'Ein Token wird bereits erstellt.'
    }
  };
  var lang = words[root.getAttribute('lang')] ? root.getAttribute('lang') : 'en';

  function text(key) {
    return words[lang][key] || words.en[key];
  }

  // ---- card rules (as the gateway's internal/card package knows them) ----

  function digitsOf(s) {
    return String(s).replace(/\D+/g, '');
  }

  // luhn reports whether a string of digits passes the Luhn check.
  function luhn(digits) {
    var sum = 0;
    var double = false;
    for (var i = digits.length - 1; i >= 0; i--) {
      var d = digits.charCodeAt(i) - 48;
      if (double) {
        d *= 2;
        if (d > 9) {
          d -= 9;
        }
      }
      sum += d;
      double = !double;
    }
    return digits.length > 0 && sum % 10 === 0;
  }

  function prefix(digits, n) {
    return digits.length >= n ? parseInt(digits.slice(0, n), 10) : -1;
  }

  // brandOf names the scheme from the leading digits: visa (4),
  // mastercard (51-55, 2221-2720), amex (34, 37), discover (6011, 644-649,
  // 65), jcb (3528-3589), diners (300-305, 36, 38, 39), unionpay (62),
  // unknown otherwise.
  function brandOf(digits) {
    var p2 = prefix(digits, 2);
    var p3 = prefix(digits, 3);
    var p4 = prefix(digits, 4);
    if (digits.charAt(0) === '4') {
      return 'visa';
    }
    if ((p2 >= 51 && p2 <= 55) || (p4 >= 2221 && p4 <= 2720)) {
      return 'mastercard';
    }
    if (p2 === 34 || p2 === 37) {
      return 'amex';
    }
    if (p4 === 6011 || (p3 >= 644 && p3 <= 649) || p2 === 65) {
      return 'discover';
    }
    if (p4 >= 3528 && p4 <= 3589) {
      return 'jcb';
    }
    if ((p3 >= 300 && p3 <= 305) || p2 === 36 || p2 === 38 || p2 === 39) {
      return 'diners';
    }
    if (p2 === 62) {
      return 'unionpay';
    }
    return 'unknown';
  }

  var brandNames = {
    visa: 'Visa', mastercard: 'Mastercard', amex: 'American Express', discover: 'Discover',
    jcb: 'JCB', diners: 'Diners Club', unionpay: 'UnionPay'
  };

  // lengthsOf is the number lengths a brand issues, shortest first; a
  // brand the frame does not know may have any length the gateway takes
  // (13 to 19 digits).
  function lengthsOf(brand) {
    switch (brand) {
      case 'amex': return [15];
      case 'diners': return [14, 16, 19];
      case 'visa': return [13, 16, 19];
      case 'mastercard': return [16];
      case 'unknown': return [13, 14, 15, 16, 17, 18, 19];
      default: return [16, 17, 18, 19];
    }
  }

  function cvcLength(brand) {
    return brand === 'amex' ? 4 : 3;
  }

  // format writes a number as its brand does: amex 4-6-5, diners of 14
  // digits 4-6-4, every other in groups of four.
  function format(digits, brand) {
    var groups = [4, 4, 4, 4, 3];
    if (brand === 'amex') {
      groups = [4, 6, 5];
    } else if (brand === 'diners' && digits.length <= 14) {
      groups = [4, 6, 4];
    }
    var out = [];
    var i = 0;
    for (var g = 0; g < groups.length && i < digits.length; g++) {
      out.push(digits.slice(i, i + groups[g]));
      i += groups[g];
    }
    if (i < digits.length) {
      out.push(digits.slice(i));
    }
    return out.join(' ');
  }

  function maxDigits(brand) {
    var ls = lengthsOf(brand);
    return ls[ls.length - 1];
  }

  // ---- fields ----

  var form = document.getElementById('card');
  var fields = {
    number: document.getElementById('number'),
    expiry: document.getElementById('expiry'),
    cvc: document.getElementById('cvc'),
    name: document.getElementById('name')
  };
  var errorsEl = {
    number: document.getElementById('number-error'),
    expiry: document.getElementById('expiry-error'),
    cvc: document.getElementById('cvc-error'),
    name: document.getElementById('name-error')
  };
  var brandEl = document.getElementById('brand');
  var order = ['number', 'expiry', 'cvc', 'name'];
  // shown[f] is set once the shopper left field f (or tried to pay): its
  // error is then shown as they type, not before.
  var shown = {};

  function currentBrand() {
    return brandOf(digitsOf(fields.number.value));
  }

  // parseExpiry reads "MM / YY" into {month, year} (year 20YY), null when
  // incomplete.
  function parseExpiry(value) {
    var d = digitsOf(value);
    if (d.length !== 4) {
      return null;
    }
    return { month: parseInt(d.slice(0, 2), 10), year: 2000 + parseInt(d.slice(2), 10), mm: d.slice(0, 2), yy: d.slice(2) };
  }

  // check returns the error of one field: {code, message}, or null.
  function check(name) {
    var v = fields[name].value;
    var brand = currentBrand();
    switch (name) {
      case 'number': {
        var d = digitsOf(v);
        if (d.length === 0) {
          return { code: 'incomplete_number', message: text('enter_number') };
        }
        // Complete only at a length the brand issues: a Luhn-valid
        // prefix of a longer number is still being typed.
        var ls = lengthsOf(brand);
        if (ls.indexOf(d.length) < 0 && d.length < ls[ls.length - 1]) {
          return { code: 'incomplete_number', message: text('incomplete_number') };
        }
        if (ls.indexOf(d.length) < 0 || !luhn(d)) {
          return { code: 'invalid_number', message: text('invalid_number') };
        }
        return null;
      }
      case 'expiry': {
        var e = parseExpiry(v);
        if (digitsOf(v).length === 0) {
          return { code: 'incomplete_expiry', message: text('enter_expiry') };
        }
        if (!e) {
          return { code: 'incomplete_expiry', message: text('incomplete_expiry') };
        }
        if (e.month < 1 || e.month > 12) {
          return { code: 'invalid_expiry', message: text('invalid_month') };
        }
        var now = new Date();
        // Valid through the last day of its month (UTC), as the gateway
        // judges it.
        if (e.year < now.getUTCFullYear() || (e.year === now.getUTCFullYear() && e.month < now.getUTCMonth() + 1)) {
          return { code: 'expired_card', message: text('expired_card') };
        }
        if (e.year > now.getUTCFullYear() + 50) {
          return { code: 'invalid_expiry', message: text('far_expiry') };
        }
        return null;
      }
      case 'cvc': {
        var c = digitsOf(v);
        var want = cvcLength(brand);
        if (c.length === 0) {
          return { code: 'incomplete_cvc', message: text('enter_cvc') };
        }
        if (c.length !== want) {
          return {
            code: c.length < want ? 'incomplete_cvc' : 'invalid_cvc',
            message: text(brand === 'amex' ? 'cvc_amex' : 'cvc_3')
          };
        }
        return null;
      }
      case 'name': {
        var n = v.trim();
        if (n.length === 0) {
          return { code: 'incomplete_name', message: text('enter_name') };
        }
        if (n.length > 100) {
          return { code: 'invalid_name', message: text('long_name') };
        }
        return null;
      }
    }
    return null;
  }

  function showError(name, err) {
    var visible = shown[name] && err;
    fields[name].setAttribute('aria-invalid', visible ? 'true' : 'false');
    errorsEl[name].textContent = visible ? err.message : '';
  }

  // state is what the page may know: the brand and whether each field is
  // complete, no digit of the number (not even the last four, which change
  // as the shopper types: the token carries them) and nothing of the
  // security code.
  function state() {
    var brand = currentBrand();
    var out = { brand: brand, complete: true, empty: true, fields: {} };
    order.forEach(function (name) {
      var err = check(name);
      var empty = fields[name].value.trim() === '';
      out.fields[name] = { empty: empty, complete: !err, error: shown[name] && err ? err.code : null };
      out.complete = out.complete && !err;
      out.empty = out.empty && empty;
    });
    return out;
  }

  function post(msg) {
    msg.paygate = 1;
    window.parent.postMessage(msg, parentOrigin);
  }

  var lastState = '';
  function changed() {
    order.forEach(function (name) {
      showError(name, check(name));
    });
    var s = state();
    var key = JSON.stringify(s);
    if (key !== lastState) {
      lastState = key;
      post({ type: 'change', state: s });
    }
    resize();
  }

  // ---- formatting as the shopper types ----

  // reformat sets an input to formatted(digits) keeping the caret after
  // the same number of digits.
  function reformat(input, formatted) {
    var caret = input.selectionStart === null ? input.value.length : input.selectionStart;
    var digitsBefore = digitsOf(input.value.slice(0, caret)).length;
    input.value = formatted;
    if (document.activeElement !== input) {
      return;
    }
    var pos = 0;
    var seen = 0;
    while (pos < formatted.length && seen < digitsBefore) {
      if (/\d/.test(formatted.charAt(pos))) {
        seen++;
      }
      pos++;
    }
    input.setSelectionRange(pos, pos);
  }

  fields.number.addEventListener('input', function () {
    var brand = currentBrand();
    var d = digitsOf(fields.number.value).slice(0, maxDigits(brand));
    reformat(fields.number, format(d, brandOf(d)));
    var b = brandOf(d);
    brandEl.textContent = brandNames[b] || '';
    fields.cvc.setAttribute('maxlength', String(cvcLength(b)));
    if (digitsOf(fields.cvc.value).length > cvcLength(b)) {
      fields.cvc.value = digitsOf(fields.cvc.value).slice(0, cvcLength(b));
    }
    changed();
  });

  fields.expiry.addEventListener('input', function (e) {
    var d = digitsOf(fields.expiry.value);
    if (d.length === 6 && d.slice(2, 4) === '20') {
      // A four-digit year, pasted or filled in by the browser ("12/2029"):
      // its last two digits are the year.
      d = d.slice(0, 2) + d.slice(4);
    }
    var month = d.length === 1 && d > '1';
    if (month) {
      d = '0' + d; // "4" is April
    }
    d = d.slice(0, 4);
    var deleting = e.inputType && e.inputType.indexOf('delete') === 0;
    var out = d;
    if (d.length > 2 || (d.length === 2 && !deleting)) {
      out = d.slice(0, 2) + ' / ' + d.slice(2);
    }
    reformat(fields.expiry, out);
    if (month && document.activeElement === fields.expiry) {
      // The month is complete: the year comes next.
      fields.expiry.setSelectionRange(out.length, out.length);
    }
    changed();
  });

  fields.cvc.addEventListener('input', function () {
    fields.cvc.value = digitsOf(fields.cvc.value).slice(0, cvcLength(currentBrand()));
    changed();
  });

  fields.name.addEventListener('input', changed);

  order.forEach(function (name) {
    fields[name].addEventListener('blur', function () {
      if (fields[name].value.trim() !== '') {
        shown[name] = true;
      }
      changed();
    });
    fields[name].addEventListener('focus', function () {
      post({ type: 'focus', field: name });
    });
  });

  form.addEventListener('submit', function (e) {
    e.preventDefault();
    post({ type: 'submit' });
  });

  // ---- size ----

  var lastHeight = 0;
  function resize() {
    var h = Math.ceil(form.getBoundingClientRect().height);
    if (h !== lastHeight) {
      lastHeight = h;
      post({ type: 'resize', height: h });
    }
  }
  if (window.ResizeObserver) {
    new ResizeObserver(resize).observe(form);
  }

  // ---- style from the page: a closed list of properties, each checked ----

  var color = /^(#[0-9a-fA-F]{3,8}|(rgb|rgba|hsl|hsla)\(\s*[0-9.%\s,\/+-]{1,60}\)|[a-zA-Z]{3,24})$/;
  var styleRules = {
    color: ['--pg-color', color],
    labelColor: ['--pg-label-color', color],
    background: ['--pg-background', color],
    backgroundColor: ['--pg-background', color],
    placeholderColor: ['--pg-placeholder-color', color],
    invalidColor: ['--pg-invalid-color', color],
    borderColor: ['--pg-border-color', color],
    focusColor: ['--pg-focus-color', color],
    fontFamily: ['--pg-font-family', /^[a-zA-Z0-9 ,'"-]{1,200}$/],
    fontSize: ['--pg-font-size', /^\d{1,2}(\.\d{1,2})?(px|em|rem|pt)$/],
    fontWeight: ['--pg-font-weight', /^(normal|bold|[1-9]00)$/],
    borderRadius: ['--pg-border-radius', /^\d{1,2}(\.\d{1,2})?(px|em|rem)$/]
  };

  // applyStyle sets the custom properties of the style's known keys whose
  // values pass their pattern; others are ignored. A value goes through
  // the CSS object model, never into a style sheet's text.
  function applyStyle(style) {
    if (!style || typeof style !== 'object') {
      return;
    }
    Object.keys(styleRules).forEach(function (k) {
      var v = style[k];
      if (typeof v !== 'string' && typeof v !== 'number') {
        return;
      }
      v = String(v).trim();
      var rule = styleRules[k];
      if (rule[1].test(v)) {
        root.style.setProperty(rule[0], v);
      }
    });
    resize();
  }

  // ---- tokens ----

  var apiFields = {
    'card.number': 'number', 'card.expiryMonth': 'expiry', 'card.expiryYear': 'expiry',
    'card.cvv': 'cvc', 'card.holderName': 'name'
  };
  var busy = false;

  function fail(id, type, code, message, field) {
    post({ type: 'error', id: id, error: { type: type, code: code, message: message, field: field || null } });
  }

  function tokenize(id) {
    if (busy) {
      fail(id, 'api_error', 'tokenize_in_progress', text('busy'));
      return;
    }
    var first = null;
    order.forEach(function (name) {
      shown[name] = true;
      var err = check(name);
      if (err && !first) {
        first = { field: name, err: err };
      }
    });
    changed();
    if (first) {
      fields[first.field].focus();
      fail(id, 'validation_error', first.err.code, first.err.message, first.field);
      return;
    }
    var exp = parseExpiry(fields.expiry.value);
    var body = JSON.stringify({
      card: {
        number: digitsOf(fields.number.value),
        expiryMonth: exp.mm,
        expiryYear: exp.yy,
        cvv: digitsOf(fields.cvc.value),
        holderName: fields.name.value.trim()
      }
    });
    busy = true;
    fetch('/v1/tokens', {
      method: 'POST',
      headers: { 'Content-Type': 'application/json', 'X-API-Key': publicKey },
      body: body,
      credentials: 'omit',
      cache: 'no-store',
      referrerPolicy: 'no-referrer'
    }).then(function (res) {
      return res.text().then(function (text) {
        var data = null;
        try {
          data = JSON.parse(text);
        } catch (e) {
          data = null;
        }
        return { status: res.status, data: data };
      });
    }).then(function (r) {
      busy = false;
      // Every answer of the API is an envelope: {"data": ...} or
      // {"error": ...}.
      var tok = r.data && r.data.data;
      if (r.status === 201 && tok && typeof tok.id === 'string') {
        var c = tok.card || {};
        post({
          type: 'token', id: id,
          token: {
            id: tok.id, expiresAt: tok.expiresAt || null,
            card: { brand: c.brand, last4: c.last4, expiryMonth: c.expiryMonth, expiryYear: c.expiryYear }
          }
        });
        return;
      }
      var e = (r.data && r.data.error) || {};
      var message = typeof e.message === 'string' ? e.message : text('not_saved');
      var code = typeof e.code === 'string' ? e.code : 'HTTP_' + r.status;
      if (r.status === 429) {
        fail(id, 'rate_limited', code, text('rate_limited'));
        return;
      }
      var field = apiFields[e.param];
      if (r.status === 400 && field) {
        shown[field] = true;
        fields[field].setAttribute('aria-invalid', 'true');
        errorsEl[field].textContent = message;
        fields[field].focus();
        resize();
        fail(id, 'validation_error', code, message, field);
        return;
      }
      fail(id, 'api_error', code, message);
    }, function () {
      busy = false;
      fail(id, 'network_error', 'network_error', text('network'));
    });
  }

  // ---- messages from the page ----

  window.addEventListener('message', function (e) {
    if (e.origin !== parentOrigin || e.source !== window.parent) {
      return;
    }
    var m = e.data;
    if (!m || typeof m !== 'object' || m.paygate !== 1) {
      return;
    }
    switch (m.type) {
      case 'style':
        applyStyle(m.style);
        break;
      case 'tokenize':
        tokenize(typeof m.id === 'number' ? m.id : 0);
        break;
      case 'focus':
        fields[order.indexOf(m.field) >= 0 ? m.field : 'number'].focus();
        break;
      case 'clear':
        order.forEach(function (name) {
          fields[name].value = '';
          shown[name] = false;
        });
        brandEl.textContent = '';
        changed();
        break;
    }
  });

  lastState = JSON.stringify(state());
  post({ type: 'ready', state: state() });
  resize();
}());
