// The browser tracker served at GET /tracker.js (decisions §5). Embedded on a customer's site as
//   <script src="https://api.example.com/tracker.js" data-key="pk_…"></script>
// it keeps a first-party visitor cookie and sends a page view on load and on single-page-app
// navigations. It runs inside someone else's page: it must never throw there, and it adds one
// global, `tr`, the consent switch (decisions §12):
//   data-consent="required"  no cookie, nothing sent, until the page calls tr.consent(true); then
//                            the cookie and the page views held back (the landing's campaign with
//                            them). tr.consent(false) stops sending and deletes the cookie.
//   data-cookieless          never a cookie: page views go without a visitor id, which the
//                            service derives from a daily-rotating salted hash.
(() => {
  try {
    const script = document.currentScript;
    const key = script && script.getAttribute('data-key');
    if (!key) return;
    // data-api overrides where the page views go; by default, wherever this script came from.
    const api = (script.getAttribute('data-api') || new URL(script.src).origin).replace(/\/+$/, '');
    const endpoint = api + '/v1/pageviews?key=' + encodeURIComponent(key);
    const COOKIE = 'tr_v';
    const cookieless = script.hasAttribute('data-cookieless');
    let consented = script.getAttribute('data-consent') !== 'required';
    // Page views held back until consent, with the time they happened (a few: the landing first).
    const held = [];

    const randomId = () => {
      const c = window.crypto;
      // randomUUID only exists in secure contexts; plain-http sites get the hex fallback.
      if (c.randomUUID) return c.randomUUID();
      return Array.from(c.getRandomValues(new Uint8Array(16)), (b) => (b + 256).toString(16).slice(1)).join('');
    };

    const visitorId = () => {
      if (cookieless) return null;
      let id;
      try {
        const found = document.cookie.split('; ').find((c) => c.startsWith(COOKIE + '='));
        id = found && found.slice(COOKIE.length + 1);
      } catch (e) {
        // Cookies can be blocked (sandboxed frames): fall through to a per-page id.
      }
      // The server takes 1..256 characters; anything else is not ours to keep.
      if (id && id.length <= 256) return id;
      id = randomId();
      try {
        document.cookie = COOKIE + '=' + id + '; Max-Age=34560000; Path=/; SameSite=Lax' +
          (location.protocol === 'https:' ? '; Secure' : '');
      } catch (e) {}
      return id;
    };

    // A string body goes as text/plain: a CORS-safelisted request, so no preflight.
    const post = (body) => {
      const data = JSON.stringify(body);
      try {
        if (navigator.sendBeacon && navigator.sendBeacon(endpoint, data)) return;
      } catch (e) {}
      if (typeof fetch === 'function') {
        fetch(endpoint, { method: 'POST', body: data, keepalive: true, credentials: 'omit', headers: { 'Content-Type': 'text/plain' } })
          .catch(() => {});
      }
    };

    // The URL last tracked: not tracked again in a row, and the referrer of the next in-app navigation,
    // so the server sees an internal navigation and carries the landing's channel.
    let last = null;
    const visitor = () => {
      const id = visitorId();
      return id ? { visitor_id: id } : { cookieless: true };
    };
    const track = () => {
      try {
        const url = location.href;
        if (url === last) return;
        const referrer = last || document.referrer || null;
        last = url;
        const view = { url: url.slice(0, 4096), referrer: referrer && referrer.slice(0, 4096), title: document.title.slice(0, 1024) };
        if (consented) post({ ...visitor(), ...view });
        else if (held.length < 20) held.push({ ...view, timestamp: new Date().toISOString() });
      } catch (e) {}
    };

    // replaceState is wrapped too: track() ignores it unless the URL changed.
    for (const name of ['pushState', 'replaceState']) {
      const original = history[name];
      history[name] = function () {
        const result = original.apply(this, arguments);
        track();
        return result;
      };
    }
    window.addEventListener('popstate', track);
    window.tr = {
      consent(granted) {
        try {
          consented = granted === true;
          if (consented && held.length > 0) {
            const ids = visitor();
            post({ batch: held.splice(0).map((view) => ({ ...ids, ...view })) });
          } else if (!consented && !cookieless) document.cookie = COOKIE + '=; Max-Age=0; Path=/; SameSite=Lax';
        } catch (e) {}
      },
    };
    track();
  } catch (e) {}
})();
