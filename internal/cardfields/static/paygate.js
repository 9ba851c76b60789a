/*
 * paygate.js: card fields for a merchant's checkout page.
 *
 *   <script src="https://GATEWAY/js/v1/paygate.js"></script>
 *   <div id="card"></div>
 *   <script>
 *     var card = Paygate('smtgw_pk_test_...').mountCard('#card', {
 *       style: { fontFamily: 'Georgia, serif', color: '#222' },
 *       onReady: function () {},
 *       onChange: function (state) {},   // {brand, complete, empty, fields}
 *       onSubmit: function () {},        // Enter pressed in the fields
 *       locale: 'fr'                     // labels and messages: en (default), fr, de
 *     });
 *     card.createToken().then(function (token) { ... token.id ... },
 *                            function (err) { ... err.type, err.code, err.field ... });
 *   </script>
 *
 * The fields live in an iframe served by the gateway (the origin this
 * script was loaded from), so the card number never reaches this page: it
 * hears only the brand, whether each field is valid, and the token (whose
 * card.last4 are the only digits of the number it learns). createToken is
 * a method of the card element and resolves
 * to {id, card: {brand, last4, expiryMonth, expiryYear}, expiresAt}; it
 * rejects with a PaygateError whose type is 'validation_error',
 * 'api_error', 'network_error' or 'rate_limited', with code, message and
 * field ('number', 'expiry', 'cvc', 'name' or null).
 *
 * No dependency, no build step.
 */
(function (global) {
  'use strict';

  var script = document.currentScript;
  // The gateway is where this script came from.
  var gatewayOrigin = script && script.src ? new URL(script.src, global.location.href).origin : null;
  var framePath = '/js/v1/card-frame.html';
  var readyTimeout = 15000;
  var tokenTimeout = 60000;

  // frameTitles name the frame for assistive technology, in the languages
  // of the locale option (as the frame itself picks them).
  var frameTitles = {
    en: 'Secure card payment input',
    fr: 'Saisie sécurisée de la carte de paiement',
    de: 'Sichere Eingabe der Zahlungskarte'
  };

  function PaygateError(type, code, message, field) {
    this.name = 'PaygateError';
    this.type = type;
    this.code = code;
    this.message = message;
    this.field = field || null;
  }
  PaygateError.prototype = Object.create(Error.prototype);
  PaygateError.prototype.constructor = PaygateError;

  var errorTypes = { validation_error: 1, api_error: 1, network_error: 1, rate_limited: 1 };

  function toError(e) {
    e = e || {};
    var type = errorTypes[e.type] ? e.type : 'api_error';
    return new PaygateError(type, String(e.code || type), String(e.message || 'The card could not be saved.'),
      typeof e.field === 'string' ? e.field : null);
  }

  function Paygate(publicKey) {
    if (!(this instanceof Paygate)) {
      return new Paygate(publicKey);
    }
    if (typeof publicKey !== 'string' || !/^smtgw_pk_(test|live)_[0-9A-Za-z]+$/.test(publicKey)) {
      throw new Error('Paygate: give your public key (smtgw_pk_test_... or smtgw_pk_live_...), never a secret key');
    }
    if (!gatewayOrigin) {
      throw new Error('Paygate: load paygate.js with a <script src> from the gateway');
    }
    this.publicKey = publicKey;
  }

  // mountCard puts the card fields in target (an element or a selector)
  // and returns the card element.
  Paygate.prototype.mountCard = function (target, options) {
    var el = typeof target === 'string' ? document.querySelector(target) : target;
    if (!el || el.nodeType !== 1) {
      throw new Error('Paygate: mountCard needs an element or a selector that finds one');
    }
    return new CardElement(this.publicKey, el, options || {});
  };

  function CardElement(publicKey, container, options) {
    var self = this;
    this.options = options;
    this.ready = false;
    this.state = null;
    this.pending = {};
    this.nextId = 1;
    this.readyWaiters = [];

    var iframe = document.createElement('iframe');
    iframe.src = gatewayOrigin + framePath + '?key=' + encodeURIComponent(publicKey) +
      '&origin=' + encodeURIComponent(global.location.origin) +
      (typeof options.locale === 'string' ? '&locale=' + encodeURIComponent(options.locale) : '');
    var lang = String(options.locale || '').toLowerCase().split(/[-_]/)[0];
    iframe.title = Object.prototype.hasOwnProperty.call(frameTitles, lang) ? frameTitles[lang] : frameTitles.en;
    iframe.setAttribute('frameborder', '0');
    iframe.setAttribute('scrolling', 'no');
    iframe.setAttribute('allowtransparency', 'true');
    iframe.setAttribute('referrerpolicy', 'no-referrer');
    iframe.style.border = '0';
    iframe.style.width = '100%';
    iframe.style.height = '190px';
    iframe.style.display = 'block';
    iframe.style.overflow = 'hidden';
    this.iframe = iframe;

    this.onMessage = function (e) {
      // Only the frame this element made, from the gateway's origin.
      if (e.origin !== gatewayOrigin || !self.iframe || e.source !== self.iframe.contentWindow) {
        return;
      }
      var m = e.data;
      if (!m || typeof m !== 'object' || m.paygate !== 1) {
        return;
      }
      self.receive(m);
    };
    global.addEventListener('message', this.onMessage);
    container.appendChild(iframe);
  }

  CardElement.prototype.send = function (msg) {
    if (!this.iframe || !this.iframe.contentWindow) {
      return;
    }
    msg.paygate = 1;
    this.iframe.contentWindow.postMessage(msg, gatewayOrigin);
  };

  CardElement.prototype.receive = function (m) {
    var o = this.options;
    switch (m.type) {
      case 'ready':
        this.ready = true;
        this.state = m.state || null;
        if (o.style) {
          this.send({ type: 'style', style: o.style });
        }
        this.readyWaiters.splice(0).forEach(function (f) { f(); });
        call(o.onReady, this);
        break;
      case 'change':
        this.state = m.state || null;
        call(o.onChange, this.state);
        break;
      case 'resize':
        var h = Number(m.height);
        if (h > 0 && h < 2000) {
          this.iframe.style.height = Math.ceil(h) + 'px';
        }
        break;
      case 'submit':
        call(o.onSubmit, this);
        break;
      case 'focus':
        call(o.onFocus, m.field);
        break;
      case 'token':
      case 'error':
        var p = this.pending[m.id];
        if (!p) {
          return;
        }
        delete this.pending[m.id];
        clearTimeout(p.timer);
        if (m.type === 'token' && m.token && typeof m.token.id === 'string') {
          p.resolve(m.token);
        } else {
          p.reject(toError(m.error));
        }
        break;
    }
  };

  function call(f, arg) {
    if (typeof f === 'function') {
      try {
        f(arg);
      } catch (e) {
        setTimeout(function () { throw e; });
      }
    }
  }

  // whenReady runs f once the frame said it is ready, or fails after
  // readyTimeout (a frame this page may not embed never is).
  CardElement.prototype.whenReady = function (f, fail) {
    if (this.ready) {
      f();
      return;
    }
    var done = false;
    var timer = setTimeout(function () {
      if (!done) {
        done = true;
        fail(new PaygateError('network_error', 'frame_not_ready',
          'The card fields did not load. Check that this page\'s origin is allowed and the gateway is reachable.'));
      }
    }, readyTimeout);
    this.readyWaiters.push(function () {
      if (!done) {
        done = true;
        clearTimeout(timer);
        f();
      }
    });
  };

  // createToken asks the frame for a single-use token of the card typed.
  CardElement.prototype.createToken = function () {
    var self = this;
    return new Promise(function (resolve, reject) {
      if (!self.iframe) {
        reject(new PaygateError('api_error', 'unmounted', 'The card element was destroyed.'));
        return;
      }
      self.whenReady(function () {
        var id = self.nextId++;
        var timer = setTimeout(function () {
          if (self.pending[id]) {
            delete self.pending[id];
            reject(new PaygateError('network_error', 'timeout', 'The payment service did not answer in time.'));
          }
        }, tokenTimeout);
        self.pending[id] = { resolve: resolve, reject: reject, timer: timer };
        self.send({ type: 'tokenize', id: id });
      }, reject);
    });
  };

  // update changes the style of a mounted element.
  CardElement.prototype.update = function (options) {
    if (options && options.style) {
      this.options.style = options.style;
      if (this.ready) {
        this.send({ type: 'style', style: options.style });
      }
    }
  };

  // focus moves the keyboard focus to a field ('number' by default).
  CardElement.prototype.focus = function (field) {
    if (this.iframe) {
      this.iframe.focus();
    }
    this.send({ type: 'focus', field: field || 'number' });
  };

  // clear empties every field.
  CardElement.prototype.clear = function () {
    this.send({ type: 'clear' });
  };

  // destroy removes the frame; pending tokens are rejected.
  CardElement.prototype.destroy = function () {
    global.removeEventListener('message', this.onMessage);
    var pending = this.pending;
    this.pending = {};
    Object.keys(pending).forEach(function (id) {
      clearTimeout(pending[id].timer);
      pending[id].reject(new PaygateError('api_error', 'unmounted', 'The card element was destroyed.'));
    });
    if (this.iframe && this.iframe.parentNode) {
      this.iframe.parentNode.removeChild(this.iframe);
    }
    this.iframe = null;
    this.ready = false;
  };

  Paygate.Error = PaygateError;
  Paygate.version = '1';
  global.Paygate = Paygate;
}(window));
