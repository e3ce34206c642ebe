#!/usr/bin/env bash
# Cross-tool check of candle-graph/signature/1 with openssl (both directions):
#  1. keygen + sign by candle-graph  -> openssl pkeyutl -verify -rawin accepts the signature;
#     openssl derives the same public key from the private key file.
#  2. key made by openssl genpkey, message signed by openssl pkeyutl -sign -rawin, sidecar
#     assembled by this script -> candle-graph verify-signature accepts it.
#  3. tampering (manifest byte, other key, signature of another message) is refused.
set -euo pipefail
CG="${CG_BINARY_DIR:?}/agent/candle-graph"
SRC="${CG_SOURCE_DIR:-$(pwd)}"
command -v openssl >/dev/null || { echo "SKIP: openssl is not installed"; exit 0; }
T="$(mktemp -d)"
trap 'rm -rf "$T"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }

cp -r "$SRC/tests/fixtures/bundles/good_nsight/bundle" "$T/b"
msg() { printf 'candle-graph/signature/1\0' >"$2"; cat "$1/bundle.json" >>"$2"; }
field() { python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))[sys.argv[2]])' "$1" "$2"; }

# 1. candle-graph signs, openssl verifies
"$CG" keygen --out "$T/k" >"$T/keygen.json"
[ "$(stat -c %a "$T/k")" = 600 ] || fail "private key mode is not 0600"
head -1 "$T/k" | grep -q -- '-----BEGIN PRIVATE KEY-----' || fail "private key is not PKCS#8 PEM"
openssl pkey -in "$T/k" -pubout | cmp - "$T/k.pub" || fail "openssl derives a different public key"
"$CG" sign "$T/b" --key "$T/k" >"$T/sign.out"
[ -f "$T/b.sig.json" ] || fail "sidecar not written beside the bundle"
! find "$T/b" -name '*.sig.json' | grep -q . || fail "sidecar written inside the bundle"
cmp "$T/sign.out" "$T/b.sig.json" || fail "sign stdout differs from the sidecar"
msg "$T/b" "$T/msg"
field "$T/b.sig.json" signature | base64 -d >"$T/sig"
[ "$(stat -c %s "$T/sig")" = 64 ] || fail "signature is not 64 bytes"
openssl pkeyutl -verify -pubin -inkey "$T/k.pub" -rawin -in "$T/msg" -sigfile "$T/sig" >/dev/null \
  || fail "openssl rejects the candle-graph signature"
# key_id = first 16 bytes of SHA-256 of the raw public key
raw_pk_hex=$(openssl pkey -pubin -in "$T/k.pub" -outform DER | tail -c 32 | sha256sum | cut -c1-32)
[ "$(field "$T/b.sig.json" key_id)" = "$raw_pk_hex" ] || fail "key_id mismatch"
[ "$(field "$T/b.sig.json" manifest_sha256)" = "$(sha256sum "$T/b/bundle.json" | cut -d' ' -f1)" ] || fail "manifest_sha256"
"$CG" verify-signature "$T/b" >/dev/null || fail "verify-signature (sidecar key)"
"$CG" verify-signature "$T/b" --public-key "$T/k.pub" >/dev/null || fail "verify-signature (PEM key)"
openssl pkey -pubin -in "$T/k.pub" -outform DER | tail -c 32 | base64 >"$T/k.raw64"
"$CG" verify-signature "$T/b" --public-key "$T/k.raw64" >/dev/null || fail "verify-signature (raw base64 key)"

# 2. openssl makes the key and the signature; candle-graph verifies
openssl genpkey -algorithm ed25519 -out "$T/ok" 2>/dev/null
openssl pkey -in "$T/ok" -pubout -out "$T/ok.pub"
openssl pkeyutl -sign -inkey "$T/ok" -rawin -in "$T/msg" -out "$T/osig"
pk64=$(openssl pkey -pubin -in "$T/ok.pub" -outform DER | tail -c 32 | base64 -w0)
kid=$(openssl pkey -pubin -in "$T/ok.pub" -outform DER | tail -c 32 | sha256sum | cut -c1-32)
cat >"$T/b.sig.json" <<JSON
{
  "schema": "candle-graph/signature/1",
  "algorithm": "ed25519",
  "key_id": "$kid",
  "public_key": "$pk64",
  "manifest_sha256": "$(sha256sum "$T/b/bundle.json" | cut -d' ' -f1)",
  "signature": "$(base64 -w0 "$T/osig")"
}
JSON
"$CG" verify-signature "$T/b" --public-key "$T/ok.pub" >"$T/v.json" || fail "candle-graph rejects the openssl signature"
grep -q '"status": "valid"' "$T/v.json" || fail "no valid status"
# an openssl-generated private key is also usable by candle-graph sign
"$CG" sign "$T/b" --key "$T/ok" >/dev/null || fail "sign with an openssl key"
"$CG" verify-signature "$T/b" --public-key "$T/ok.pub" >/dev/null || fail "verify after signing with openssl key"

# 3. refusals
if "$CG" verify-signature "$T/b" --public-key "$T/k.pub" 2>"$T/err"; then fail "wrong expected key accepted"; fi
grep -q "not the expected key" "$T/err" || fail "wrong-key message: $(cat "$T/err")"
printf 'other message' >"$T/other"
openssl pkeyutl -sign -inkey "$T/ok" -rawin -in "$T/other" -out "$T/osig2"
sed -i "s|\"signature\": \".*\"|\"signature\": \"$(base64 -w0 "$T/osig2")\"|" "$T/b.sig.json"
if "$CG" verify-signature "$T/b" 2>"$T/err"; then fail "signature over another message accepted"; fi
grep -q "is not valid" "$T/err" || fail "bad-signature message: $(cat "$T/err")"
"$CG" sign "$T/b" --key "$T/k" >/dev/null
sed -i 's/"run_id": "run-fixture-1"/"run_id": "run-fixture-2"/' "$T/b/bundle.json"
if "$CG" verify-signature "$T/b" 2>"$T/err"; then fail "tampered manifest accepted"; fi
if "$CG" keygen --out "$T/k" 2>"$T/err"; then fail "keygen overwrote a key"; fi
echo "PASS: signature interop with openssl"
