#!/usr/bin/env bash
# End-to-end checks of the bundle commands against stock tools:
#  - report publishes a bundle whose manifest digests/sizes equal sha256sum/stat;
#  - verify (plain and --semantic) envelopes; tampering fails closed;
#  - no command writes inside an input bundle (lexical .., symlink alias, root);
#  - nested bundles are refused;
#  - pack/unpack interoperate with GNU tar and the zstd CLI in both directions;
#  - hostile archives made by GNU tar are refused with their class and leave nothing.
set -euo pipefail
# shellcheck source=../support/cli_lib.sh
. "${CG_SOURCE_DIR:-$(pwd)}/tests/support/cli_lib.sh"
TRACE="$SRC/tests/fixtures/bundles/semantic_good_trace_only/trace.jsonl"
NSIGHT="$SRC/tests/fixtures/bundles/semantic_good_nsight/nsight"

# --- report + manifest digests equal sha256sum ---
"$CG" report "$TRACE" --bundle b --nsight-dir "$NSIGHT" -o receipt.json
[ "$(json receipt.json schema)" = candle-graph/publication/1 ] || fail "receipt schema"
[ "$(json receipt.json status)" = published ] || fail "receipt status"
# publication/1 is a derived struct: declaration order (checked against the crate's CLI)
python3 -c 'import json; d=json.load(open("receipt.json")); assert list(d)==["schema","status","bundle_path","run_id","verification"]; assert list(d["verification"])==["schema","bundle_schema","run_id","manifest_path","manifest_sha256","files_verified","bytes_verified"]' || fail "receipt key order"
[ "$(json receipt.json verification.manifest_sha256)" = "$(sha256sum b/bundle.json | cut -d' ' -f1)" ] || fail "manifest_sha256"
python3 - b <<'PY' || fail "manifest digests differ from sha256sum"
import json, subprocess, sys, os
root = sys.argv[1]
m = json.load(open(os.path.join(root, "bundle.json")))
paths = [f["path"] for f in m["files"]]
assert paths == sorted(paths), "files not sorted by path"
assert paths == ["evidence.json", "nsight/cuda_gpu_kern_sum.csv", "nsight/report.nsys-rep", "report.md", "trace.jsonl", "viewer.html"], paths
for f in m["files"]:
    out = subprocess.check_output(["sha256sum", os.path.join(root, f["path"])]).decode().split()[0]
    assert out == f["sha256"], (f["path"], out, f["sha256"])
    assert os.stat(os.path.join(root, f["path"])).st_size == f["bytes"], f["path"]
raw = open(os.path.join(root, "bundle.json"), "rb").read()
assert raw == (json.dumps(m, indent=2) + "\n").encode(), "bundle.json is not pretty JSON + newline"
PY
cmp "$TRACE" b/trace.jsonl || fail "trace.jsonl is not a byte copy"
ls -A . | grep -q '^\.b\.tmp-' && fail "staging directory left behind"

# --- verify envelopes ---
"$CG" verify b -o v.json
[ "$(json v.json schema)" = candle-graph/verify/1 ] || fail "verify schema"
python3 -c 'import json; d=json.load(open("v.json")); assert d["semantic"] is None; assert list(d)==["receipt","schema","semantic","tool"]' || fail "verify envelope"
"$CG" verify b --semantic >vs.json
[ "$(json vs.json semantic.status)" = rederived_match ] || fail "semantic status"
cmp <(json v.json receipt) <(json vs.json receipt) || fail "receipt not deterministic"
"$CG" verify "$T/b/" >/dev/null || fail "trailing slash"

# --- no output inside an input bundle ---
ln -s b alias
for out in b/out.json b/../b/out.json alias/out.json b; do
  if "$CG" verify b -o "$out" 2>err.txt; then fail "verify wrote $out"; fi
  grep -q "refusing to write command output" err.txt || fail "message for $out: $(cat err.txt)"
done
if "$CG" pack b -o b/x.tar 2>err.txt; then fail "pack wrote inside"; fi
if "$CG" verify-signature b -o alias/sig.json 2>err.txt; then fail "verify-signature wrote inside"; fi
if "$CG" report "$TRACE" --bundle c -o c/receipt.json 2>err.txt; then fail "report wrote inside new bundle"; fi
[ ! -e c ] || fail "refused report left a bundle"
"$CG" verify b >/dev/null || fail "bundle changed by refused commands"

# --- nested bundles and existing destinations ---
if "$CG" report "$TRACE" --bundle b/inner 2>err.txt; then fail "nested bundle published"; fi
grep -q "inside existing bundle" err.txt || fail "nested message: $(cat err.txt)"
if "$CG" report "$TRACE" --bundle b 2>err.txt; then fail "published over an existing bundle"; fi
grep -q "bundle destination already exists" err.txt || fail "exists message"

# --- semantic verification fails closed on tampered evidence ---
cp -r b t && sed -i 's/"device": "cuda:0"/"device": "cuda:9"/' t/evidence.json
python3 - t <<'PY'
import json, hashlib, os, sys
root = sys.argv[1]; p = os.path.join(root, "bundle.json"); m = json.load(open(p))
for f in m["files"]:
    b = open(os.path.join(root, f["path"]), "rb").read(); f["bytes"] = len(b); f["sha256"] = hashlib.sha256(b).hexdigest()
open(p, "w").write(json.dumps(m, indent=2) + "\n")
PY
"$CG" verify t >/dev/null || fail "re-hashed bundle should pass plain verification"
if "$CG" verify t --semantic 2>err.txt; then fail "tampered evidence passed --semantic"; fi
grep -q "semantic verification failed" err.txt || fail "semantic message: $(cat err.txt)"
echo x >>t/report.md
if "$CG" verify t 2>err.txt; then fail "size change passed"; fi
grep -qF 'bundle file "report.md" size mismatch' err.txt || fail "size message"

# --- pack/unpack with GNU tar and zstd ---
"$CG" pack b -o b.tar >/dev/null
"$CG" pack b -o b.tar.zst >/dev/null
[ "$(tar -tf b.tar | head -1)" = bundle.json ] || fail "bundle.json is not first"
mkdir gnu && tar -C gnu -xf b.tar && "$CG" verify gnu >/dev/null || fail "GNU tar extraction does not verify"
(cd gnu && python3 -c 'import json; [print(f["sha256"]+"  "+f["path"]) for f in json.load(open("bundle.json"))["files"]]' | sha256sum -c --quiet) || fail "sha256sum -c"
zstd -q -d -c b.tar.zst | cmp - b.tar || fail "tar.zst is not zstd(tar)"
"$CG" unpack b.tar.zst --into u1 >/dev/null && "$CG" verify u1 --semantic >/dev/null || fail "unpack tar.zst"
"$CG" unpack b.tar --into u2 >/dev/null && "$CG" verify u2 >/dev/null || fail "unpack tar"
tar -C b -cf gnu.tar . && "$CG" unpack gnu.tar --into u3 >/dev/null && "$CG" verify u3 >/dev/null || fail "GNU tar archive (./ entries)"
if tar --help 2>/dev/null | grep -q -- --zstd; then
  tar --zstd -C b -cf gnu.tar.zst . && "$CG" unpack gnu.tar.zst --into u4 >/dev/null && "$CG" verify u4 >/dev/null || fail "GNU tar --zstd archive"
fi
if "$CG" unpack b.tar --into u2 2>err.txt; then fail "unpack over an existing dir"; fi
if "$CG" unpack b.tar --into b/nested 2>err.txt; then fail "unpack inside a bundle"; fi
grep -q "inside existing bundle" err.txt || fail "unpack nested message: $(cat err.txt)"
"$CG" verify b >/dev/null || fail "bundle changed by a refused unpack"

# --- an empty Nsight dir (nsight/ exists, no files) survives transport: semantic still matches ---
mkdir emptyns && "$CG" report "$TRACE" --bundle be --nsight-dir emptyns >/dev/null
"$CG" pack be -o be.tar.zst >/dev/null && "$CG" unpack be.tar.zst --into ue >/dev/null
[ -d ue/nsight ] || fail "empty nsight/ lost in transport"
"$CG" verify ue --semantic >/dev/null || fail "semantic verification after transport"

# --- non-ASCII and long (>100 byte) names survive pack/unpack and GNU tar (pax) ---
mkdir nsu && printf 'x\n' >"nsu/ké_données.csv" && printf 'y\n' >"nsu/$(printf 'n%.0s' $(seq 150)).csv"
"$CG" report "$TRACE" --bundle bu --nsight-dir nsu >/dev/null
"$CG" pack bu -o bu.tar.zst >/dev/null && "$CG" unpack bu.tar.zst --into uu1 >/dev/null && "$CG" verify uu1 >/dev/null \
  || fail "non-ASCII pack/unpack"
"$CG" pack bu -o bu.tar >/dev/null && mkdir gu && tar -C gu -xf bu.tar 2>/dev/null && "$CG" verify gu >/dev/null \
  || fail "GNU tar extraction of non-ASCII names"
tar --format=pax -C bu -cf gnupax.tar . && "$CG" unpack gnupax.tar --into uu2 >/dev/null && "$CG" verify uu2 >/dev/null \
  || fail "GNU tar pax archive with UTF-8 names"

# --- hostile archives made by GNU tar ---
mkdir h && cp b/bundle.json h/ && ln -s /etc/passwd h/trace.jsonl
tar -C h -cf sym.tar . 
if "$CG" unpack sym.tar --into x1 2>err.txt; then fail "symlink archive accepted"; fi
grep -q "special_file:" err.txt || fail "symlink class: $(cat err.txt)"
rm h/trace.jsonl && cp b/trace.jsonl h/ && ln h/trace.jsonl h/hard.jsonl
tar -C h -cf hard.tar . 
if "$CG" unpack hard.tar --into x2 2>err.txt; then fail "hard link archive accepted"; fi
grep -q "special_file:" err.txt || fail "hard link class: $(cat err.txt)"
tar -cf abs.tar -P "$T/b/bundle.json"
if "$CG" unpack abs.tar --into x3 2>err.txt; then fail "absolute path accepted"; fi
grep -q "unsafe_path:" err.txt || fail "absolute class: $(cat err.txt)"
# GNU tar strips leading ../ when creating; Python's tarfile writes the name as given
python3 -c 'import tarfile; t=tarfile.open("dotdot.tar","w"); t.add("b/bundle.json", arcname="bundle.json"); t.add("b/trace.jsonl", arcname="nsight/../../evil.jsonl"); t.close()'
if "$CG" unpack dotdot.tar --into x4 2>err.txt; then fail "../ path accepted"; fi
grep -q "unsafe_path:" err.txt || fail "dotdot class: $(cat err.txt)"
head -c 3000 b.tar.zst >trunc.tar.zst
if "$CG" unpack trunc.tar.zst --into x5 2>err.txt; then fail "truncated zstd accepted"; fi
grep -q "malformed_archive:" err.txt || fail "truncated class: $(cat err.txt)"
for x in x1 x2 x3 x4 x5; do [ ! -e "$x" ] || fail "$x left behind"; done
ls -A . | grep -q '\.unpack-' && fail "staging left behind"
echo "PASS: bundle CLI (report, verify, pack, unpack) against sha256sum, GNU tar, zstd"
