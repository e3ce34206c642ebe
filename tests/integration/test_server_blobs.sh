#!/usr/bin/env bash
# Blobs at rest (issue 14): the fs blob store keeps each file zstd-compressed in
# independent frames with a frame index (server/blobfmt.c), plain when
# incompressible, raw (header + bytes) when plain content would read as a blob
# header, and still reads blobs of older servers (plain files). Against the real
# server and PostgreSQL:
#   - a compressible file is stored as zstd (blob magic, zstd frames) and
#     smaller; an incompressible one as its plain bytes; a file that starts with
#     a valid blob header of its own length is wrapped in a raw header;
#   - /files, Range reads (first byte, a range across a frame boundary, one over
#     several frames, the last byte, a suffix range) and /archive return the
#     exact plain bytes;
#   - /metrics reports stored and plain bytes and their ratio;
#   - a plain blob of an older server is still served, placed into /archive and
#     checked by fsck; fsck decompresses and hashes every form and reports a
#     damaged frame;
#   - the pg blob store (--blob-store pg) keeps the same at-rest form in its
#     chunks (zstd for compressible content, the plain bytes behind a raw header
#     otherwise, over several 1 MiB chunks), returns the exact bytes from /files,
#     Range reads across frame and chunk boundaries and /archive, reports its
#     stored/plain bytes and forms in /metrics, still reads the plain chunks of an
#     older server, and fsck of the pg store is clean.
. "${CG_SOURCE_DIR:-.}/tests/support/server_lib.sh"
srv_setup
TOK=$("$SERVER" admin bootstrap --database-url "$DBURL" | jq -r .token) || die "bootstrap failed"
H=$(auth "$TOK")
srv_start blobs --require-signature no

FRAME=262144 # SRV_BLOB_FRAME
blob_of() { printf '%s/blobs/sha256/%s/%s' "$SRV_DATA" "${1:0:2}" "$1"; }
sha() { sha256sum "$1" | cut -d' ' -f1; }
form_of() { # plain | raw | zstd, from the header (magic, form word; blobfmt.c checks its digest too)
  local f=$1
  if [ "$(head -c 8 "$f" | od -An -tx1 | tr -d ' \n')" != 894347424c4f420a ]; then
    echo plain; return
  fi
  case "$(od -An -tu4 -j12 -N4 "$f" | tr -d ' ')" in 1) echo raw ;; 2) echo zstd ;; *) echo unknown ;; esac
}

# ---------------------------------------------------------------- a bundle with a compressible and an incompressible file
make_bundle "$T/b1" blobs-1
mkdir -p "$T/b1/data"
awk 'BEGIN { for (i = 0; i < 40000; i++) printf "{\"kind\":\"op\",\"seq\":%d,\"name\":\"matmul_%d\"}\n", i, i % 97 }' >"$T/b1/data/ops.jsonl"
head -c 600000 /dev/urandom >"$T/b1/data/noise.bin"
# content that is itself a valid raw blob header for its own length, then noise
python3 - "$T/b1/data/fake.bin" <<'PY'
import hashlib, os, struct, sys
body = os.urandom(300000)
h = b"\x89CGBLOB\n" + struct.pack("<IIQIIQ", 1, 1, len(body), 0, 0, 64 + len(body)) + bytes(16)
open(sys.argv[1], "wb").write(h + hashlib.sha256(h).digest()[:8] + body)
PY
manifest "$T/b1" blobs-1
pack "$T/b1" "$T/b1.tar.zst" zstd
upload "$T/b1.tar.zst" "$TOK"; expect 201 "" "upload a bundle with a 1.3 MB text file and 600 kB of noise" || die "upload: $BODY"
ID=$(jq -r .id "$T/body")
OPS=$T/b1/data/ops.jsonl NOISE=$T/b1/data/noise.bin
OPS_N=$(stat -c %s "$OPS")
[ "$OPS_N" -gt $((4 * FRAME)) ] && pass "ops.jsonl spans $(( (OPS_N + FRAME - 1) / FRAME )) frames" || fail "ops.jsonl too small: $OPS_N"

FAKE=$T/b1/data/fake.bin
OB=$(blob_of "$(sha "$OPS")") NB=$(blob_of "$(sha "$NOISE")") FB=$(blob_of "$(sha "$FAKE")")
[ "$(form_of "$OB")" = zstd ] && [ "$(stat -c %s "$OB")" -lt $((OPS_N / 4)) ] \
  && pass "the text blob is zstd at rest: $(stat -c %s "$OB") of $OPS_N bytes" || fail "text blob: form $(form_of "$OB"), $(stat -c %s "$OB") bytes"
[ "$(od -An -tx1 -j64 -N4 "$OB" | tr -d ' ')" = 28b52ffd ] && pass "its first frame is a zstd frame" || fail "first frame magic: $(od -An -tx1 -j64 -N4 "$OB")"
cmp -s "$NB" "$NOISE" && pass "the incompressible blob is stored as its plain bytes" || fail "noise blob: form $(form_of "$NB"), $(stat -c %s "$NB") bytes"
[ "$(form_of "$FAKE")" = raw ] && [ "$(form_of "$FB")" = raw ] && [ "$(stat -c %s "$FB")" = $(( $(stat -c %s "$FAKE") + 64 )) ] \
  && cmp -s <(tail -c +65 "$FB") "$FAKE" && pass "content that reads as a blob header is wrapped in a raw header" \
  || fail "header-like content: blob form $(form_of "$FB"), $(stat -c %s "$FB") bytes"

# ---------------------------------------------------------------- exact bytes: whole files and ranges
http GET "/bundles/$ID/files/data/ops.jsonl" -H "$H"; expect 200 "" "GET the text file"
cmp -s "$T/body" "$OPS" && pass "whole text file exact" || fail "text file differs"
grep -qi '^Accept-Ranges: bytes' "$T/hdr" && pass "Accept-Ranges: bytes" || fail "no Accept-Ranges"
http GET "/bundles/$ID/files/data/noise.bin" -H "$H"; expect 200 "" "GET the noise file"
cmp -s "$T/body" "$NOISE" && pass "whole plain file exact" || fail "noise file differs"
http GET "/bundles/$ID/files/data/fake.bin" -H "$H"; expect 200 "" "GET the header-like file"
cmp -s "$T/body" "$FAKE" && pass "header-like file exact (its own header is content)" || fail "header-like file differs"

# range FILE LOCAL FIRST LAST LABEL (LAST empty: suffix of FIRST bytes)
range() {
  local path=$1 local=$2 a=$3 b=$4 label=$5 spec want
  if [ -z "$b" ]; then spec="-$a"; want=$(tail -c "$a" "$local" | sha256sum)
  else spec="$a-$b"; want=$(tail -c +$((a + 1)) "$local" | head -c $((b - a + 1)) | sha256sum); fi
  http GET "/bundles/$ID/files/$path" -H "$H" -H "Range: bytes=$spec"; expect 206 "" "Range $spec of $path ($label)" || return
  [ "$(sha256sum <"$T/body")" = "$want" ] && pass "$label: exact bytes" || fail "$label: bytes differ"
  grep -qi "^Content-Range: bytes .*/$(stat -c %s "$local")" "$T/hdr" && pass "$label: Content-Range" \
    || fail "$label: $(grep -i '^Content-Range' "$T/hdr")"
}
range data/ops.jsonl "$OPS" 0 0 "first byte"
range data/ops.jsonl "$OPS" $((FRAME - 100)) $((FRAME + 99)) "across the first frame boundary"
range data/ops.jsonl "$OPS" $((FRAME + 5)) $((3 * FRAME + 7)) "over three frames"
range data/ops.jsonl "$OPS" $((OPS_N - 1)) $((OPS_N - 1)) "last byte"
range data/ops.jsonl "$OPS" 1000 "" "suffix of 1000 bytes"
range data/noise.bin "$NOISE" 299990 300009 "middle of the plain blob"
range data/noise.bin "$NOISE" 1 "" "last byte of the plain blob (suffix)"
range data/fake.bin "$FAKE" 0 99 "start of the raw blob"
range data/fake.bin "$FAKE" 1 "" "last byte of the raw blob (suffix)"

# ---------------------------------------------------------------- migration: a plain blob of an older server
make_bundle "$T/b2" blobs-2
mkdir -p "$T/b2/data"
seq 1 200000 >"$T/b2/data/old.txt"
manifest "$T/b2" blobs-2
pack "$T/b2" "$T/b2.tar"
upload "$T/b2.tar" "$TOK"; expect 201 "" "upload a second bundle" || die "upload 2: $BODY"
ID2=$(jq -r .id "$T/body")
OLD=$T/b2/data/old.txt
LB=$(blob_of "$(sha "$OLD")")
cp "$OLD" "$LB.plain" && chmod 600 "$LB.plain" && mv "$LB.plain" "$LB" # what an older server stored
[ "$(form_of "$LB")" = plain ] && pass "a zstd blob replaced by its plain bytes (as older servers stored it)" || fail "older-server blob setup"
http GET "/bundles/$ID2/files/data/old.txt" -H "$H"; expect 200 "" "GET a plain blob of an older server"
cmp -s "$T/body" "$OLD" && pass "older-server blob served exactly" || fail "older-server blob differs"
SAVE_ID=$ID; ID=$ID2
range data/old.txt "$OLD" 100000 400000 "older-server blob range"
ID=$SAVE_ID

for b in "$ID" "$ID2"; do
  http GET "/bundles/$b/archive" -H "$H"; expect 200 "" "GET /archive of ${b:0:12}"
  rm -rf "$T/x" && mkdir -p "$T/x" && zstd -q -d -c "$T/body" | tar -xf - -C "$T/x" || fail "archive does not unpack"
  src=$T/b1; [ "$b" = "$ID2" ] && src=$T/b2
  diff -r "$T/x" "$src" >/dev/null && pass "archive of ${b:0:12} holds the exact files" || fail "archive files differ: $(diff -rq "$T/x" "$src" | head -3)"
done

# ---------------------------------------------------------------- /metrics
http GET /metrics -H "$H"; expect 200 "" "GET /metrics"
m() { awk -v k="$1" '$1 == k {print $2}' "$T/body"; }
ST=$(m cg_blob_store_stored_bytes) PL=$(m cg_blob_store_plain_bytes) RT=$(m cg_blob_store_compression_ratio)
[ -n "$ST" ] && [ -n "$PL" ] && [ "$ST" -lt "$PL" ] && pass "stored $ST < plain $PL bytes" || fail "metrics stored/plain: '$ST' '$PL'"
awk -v s="$ST" -v p="$PL" -v r="$RT" 'BEGIN { exit !(r > 0 && r < 1 && (s / p - r) < 1e-5 && (r - s / p) < 1e-5) }' \
  && pass "compression ratio $RT = stored / plain" || fail "ratio $RT vs $ST/$PL"
grep -q '^cg_blob_store_files{form="plain"} [1-9]' "$T/body" && grep -q '^cg_blob_store_files{form="raw"} [1-9]' "$T/body" \
  && grep -q '^cg_blob_store_files{form="zstd"} [1-9]' "$T/body" && pass "blob files counted by form" \
  || fail "form counts: $(grep cg_blob_store_files "$T/body")"
grep -q '^# TYPE cg_blob_store_compression_ratio gauge' "$T/body" && pass "ratio is a documented gauge" || fail "no TYPE line"

# ---------------------------------------------------------------- fsck over every form, then a damaged frame
FS=$("$SERVER" fsck --data-dir "$SRV_DATA" --database-url "$DBURL") && jq -e '.clean and .blobs_checked > 8' <<<"$FS" >/dev/null \
  && pass "fsck clean over zstd, raw and plain blobs ($(jq .blobs_checked <<<"$FS") blobs)" || fail "fsck: $FS"
cp "$OB" "$T/ob.save"
printf '\377\377\377\377' | dd of="$OB" bs=1 seek=$((64 + 200)) conv=notrunc status=none
if "$SERVER" fsck --data-dir "$SRV_DATA" --database-url "$DBURL" >"$T/fsck.json"; then fail "fsck missed a damaged zstd frame"
else jq -e --arg h "$(sha "$OPS")" '.damaged | length == 1 and .[0].sha256 == $h and .[0].stored_form == "zstd"' "$T/fsck.json" >/dev/null \
  && pass "fsck reports the damaged zstd frame" || fail "fsck damage report: $(cat "$T/fsck.json")"; fi
CODE=$(curl -s -o "$T/dmg" -w '%{http_code}' -H "$H" -H "Range: bytes=$((3 * FRAME))-$((3 * FRAME + 9))" "$URL/bundles/$ID/files/data/ops.jsonl")
[ "$CODE" = 206 ] && cmp -s "$T/dmg" <(tail -c +$((3 * FRAME + 1)) "$OPS" | head -c 10) \
  && pass "a range in an intact frame of the damaged blob still reads exactly" || fail "intact frame range: $CODE"
cp "$T/ob.save" "$OB"

srv_stop

# ---------------------------------------------------------------- the pg blob store
srv_start blobs-pg --require-signature no --blob-store pg
make_bundle "$T/b3" blobs-3
mkdir -p "$T/b3/data"
awk 'BEGIN { for (i = 0; i < 40000; i++) printf "{\"kind\":\"op\",\"seq\":%d,\"name\":\"conv_%d\"}\n", i, i % 89 }' >"$T/b3/data/ops.jsonl"
head -c 1600000 /dev/urandom >"$T/b3/data/noise.bin" # incompressible, over two 1 MiB chunks
seq 1 3000 >"$T/b3/data/old.txt"
manifest "$T/b3" blobs-3
pack "$T/b3" "$T/b3.tar.zst" zstd
upload "$T/b3.tar.zst" "$TOK"; expect 201 "" "upload a bundle to a server with the pg blob store" || die "pg upload: $BODY"
ID=$(jq -r .id "$T/body")
OPS=$T/b3/data/ops.jsonl NOISE=$T/b3/data/noise.bin OLD=$T/b3/data/old.txt
OPS_N=$(stat -c %s "$OPS") NOISE_N=$(stat -c %s "$NOISE")
pgform() { psqlc "SELECT encode(substring(data FROM 1 FOR 8), 'hex') || ':' || get_byte(data, 12) FROM pg_blob_chunks WHERE sha256 = '$1' AND idx = 0"; }
pgstored() { psqlc "SELECT sum(octet_length(data)) || ':' || count(*) FROM pg_blob_chunks WHERE sha256 = '$1'"; }
[ "$(pgform "$(sha "$OPS")")" = 894347424c4f420a:2 ] && pass "pg: the text blob's chunks hold the zstd blob form" \
  || fail "pg text blob form: $(pgform "$(sha "$OPS")")"
S3=$(pgstored "$(sha "$OPS")")
[ "${S3%%:*}" -lt $((OPS_N / 4)) ] && pass "pg: text blob stored in ${S3%%:*} of $OPS_N bytes" || fail "pg text blob size: $S3 of $OPS_N"
[ "$(pgform "$(sha "$NOISE")")" = 894347424c4f420a:1 ] && [ "$(pgstored "$(sha "$NOISE")")" = "$((NOISE_N + 64)):2" ] \
  && pass "pg: the incompressible blob is its plain bytes behind a raw header, in 2 chunks" \
  || fail "pg noise blob: $(pgform "$(sha "$NOISE")") $(pgstored "$(sha "$NOISE")")"
# what an older server stored: the plain bytes as the only chunk
psqlc "UPDATE pg_blob_chunks SET data = decode('$(xxd -p "$OLD" | tr -d '\n')', 'hex') WHERE sha256 = '$(sha "$OLD")' AND idx = 0" >/dev/null
[ "$(psqlc "SELECT octet_length(data) FROM pg_blob_chunks WHERE sha256 = '$(sha "$OLD")'")" = "$(stat -c %s "$OLD")" ] \
  && pass "pg: a blob rewritten as an older server's plain chunk" || fail "pg older-server chunk setup"
for f in data/ops.jsonl data/noise.bin data/old.txt trace.jsonl; do
  http GET "/bundles/$ID/files/$f" -H "$H"; expect 200 "" "pg: GET $f"
  cmp -s "$T/body" "$T/b3/$f" && pass "pg: $f exact" || fail "pg: $f differs"
done
range data/ops.jsonl "$OPS" $((FRAME - 100)) $((FRAME + 99)) "pg: across a zstd frame boundary"
range data/ops.jsonl "$OPS" $((OPS_N - 1000)) "" "pg: suffix of the zstd blob"
range data/noise.bin "$NOISE" $((1048576 - 64 - 10)) $((1048576 + 10)) "pg: across the chunk boundary of the raw blob"
range data/old.txt "$OLD" 100 200 "pg: older-server chunk range"
http GET "/bundles/$ID/archive" -H "$H"; expect 200 "" "pg: GET /archive"
rm -rf "$T/x" && mkdir -p "$T/x" && zstd -q -d -c "$T/body" | tar -xf - -C "$T/x" || fail "pg archive does not unpack"
diff -r "$T/x" "$T/b3" >/dev/null && pass "pg: archive holds the exact files" || fail "pg archive differs: $(diff -rq "$T/x" "$T/b3" | head -3)"
http GET /metrics -H "$H"; expect 200 "" "pg: GET /metrics"
ST=$(m cg_blob_store_stored_bytes) PL=$(m cg_blob_store_plain_bytes)
[ -n "$ST" ] && [ -n "$PL" ] && [ "$ST" -lt "$PL" ] && pass "pg: stored $ST < plain $PL bytes" || fail "pg metrics stored/plain: '$ST' '$PL'"
grep -q '^cg_blob_store_files{form="zstd"} [1-9]' "$T/body" && grep -q '^cg_blob_store_files{form="raw"} [1-9]' "$T/body" \
  && grep -q '^cg_blob_store_files{form="plain"} [1-9]' "$T/body" && pass "pg: blobs counted by form (the older one plain)" \
  || fail "pg form counts: $(grep cg_blob_store_files "$T/body")"
srv_stop
# the fs bundles above share the database, so their blobs are missing from pg; b3's are all there and intact
"$SERVER" fsck --data-dir "$SRV_DATA" --database-url "$DBURL" --blob-store pg >"$T/fsck.json" 2>&1
B3=$(cd "$T/b3" && find . -type f -exec sha256sum {} + | cut -d' ' -f1 | jq -R . | jq -s .)
jq -e --argjson b3 "$B3" '(.damaged | length) == 0 and ([.missing[] | select(. as $h | $b3 | index($h))] | length) == 0' \
  "$T/fsck.json" >/dev/null && pass "pg: fsck decompresses and hashes every pg blob: none damaged, none of the bundle's missing" \
  || fail "pg fsck: $(cat "$T/fsck.json")"
[ "$FAILS" = 0 ] || exit 1
echo "server_blobs: all checks passed"
