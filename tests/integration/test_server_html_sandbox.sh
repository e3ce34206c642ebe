#!/usr/bin/env bash
# Uploaded HTML is sandboxed (issue 14 security item): a bundle whose viewer.html
# and probe.html carry a script that tries to read the app's token
# (sessionStorage), localStorage and cookies is uploaded to the real server, and
# headless Chromium (tests/browser/sandbox.test.mjs, playwright-core with Debian
# chromium) opens GET /bundles/{id}/viewer and the two files after the app's
# origin stored its token: the script runs in an opaque origin and reads nothing.
. "${CG_SOURCE_DIR:-.}/tests/support/server_lib.sh"
browser_deps
srv_setup_admin
srv_start sandbox --require-signature no

make_bundle "$T/s" run-sandbox
cat >"$T/s/viewer.html" <<'HTML'
<!doctype html>
<html><head><meta charset="utf-8"><title>probe</title></head>
<body><pre id="probe-result"></pre>
<script>
  var seen = { ran: true, origin: String(self.origin) };
  try { seen.session = String(sessionStorage.getItem('cg.token')); } catch (e) { seen.session = 'denied:' + e.name; }
  try { seen.local = String(localStorage.getItem('cg.probe')); } catch (e) { seen.local = 'denied:' + e.name; }
  try { seen.cookie = String(document.cookie); } catch (e) { seen.cookie = 'denied:' + e.name; }
  var out = document.getElementById('probe-result');
  out.textContent = JSON.stringify(seen);
  out.setAttribute('data-done', '1');
</script></body></html>
HTML
cp "$T/s/viewer.html" "$T/s/probe.html"
manifest "$T/s" run-sandbox; pack "$T/s" "$T/s.tar"
upload "$T/s.tar" "$ADMIN"; expect 201 "" "bundle with script-carrying HTML files" || die "upload failed"
SID=$(jq -r .id "$T/body")

export CG_WEB_URL="$URL" CG_WEB_TOKEN="$ADMIN" CG_SANDBOX_ID="$SID" CG_CHROMIUM="$CHROMIUM"
(cd "$SRC" && node --test --test-reporter=spec tests/browser/sandbox.test.mjs) && pass "uploaded HTML is sandboxed in the browser" \
  || fail "browser sandbox tests"

[ $FAILS -eq 0 ] || { note "$FAILS check(s) failed"; exit 1; }
note "all HTML sandbox checks passed"
