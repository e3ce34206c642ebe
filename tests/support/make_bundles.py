#!/usr/bin/env python3
"""make_bundles.py OUT COUNT PREFIX TRACE — writes COUNT small, distinct bundle/1
directories OUT/b<i>/ (trace.jsonl from TRACE with its run id replaced by
PREFIX-<i>, an evidence/3 evidence.json, a report.md with random bytes) with
their pax tars OUT/b<i>.tar (bundle.json first) and OUT/ids ("<i> <bundle id>"
per line), plus three invalid uploads: OUT/bad-digest.tar (a file changed after
its manifest was written), OUT/bad-undeclared.tar (a file the manifest does not
declare) and OUT/bad-garbage.tar (not an archive). One process for the whole
set, so the crash campaign (test_server_crash_campaign.sh) needs no per-bundle
tool runs. Same layout as make_bundle in server_lib.sh."""
import base64
import hashlib
import io
import json
import os
import sys
import tarfile


def manifest(run_id, files):
    entries = [{"path": p, "bytes": len(d), "sha256": hashlib.sha256(d).hexdigest()} for p, d in sorted(files.items())]
    doc = {"schema": "candle-graph/bundle/1", "run_id": run_id, "files": entries}
    return (json.dumps(doc, indent=2) + "\n").encode()


def write_tar(path, members):
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w", format=tarfile.PAX_FORMAT) as tar:
        for name, data in members:
            info = tarfile.TarInfo(name)
            info.size = len(data)
            info.mode = 0o644
            tar.addfile(info, io.BytesIO(data))
    with open(path, "wb") as f:
        f.write(buf.getvalue())


def bundle_files(trace, run_id):
    return {
        "trace.jsonl": trace.replace(b"run-4242-1", run_id.encode()),
        "evidence.json": b'{\n  "schema": "candle-graph/evidence/3"\n}\n',
        "report.md": b"# report " + run_id.encode() + b"\n" + base64.b64encode(os.urandom(600)) + b"\n",
    }


def main():
    out, count, prefix, trace_path = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4]
    with open(trace_path, "rb") as f:
        trace = f.read()
    os.makedirs(out, exist_ok=True)
    with open(os.path.join(out, "ids"), "w") as ids:
        for i in range(count):
            run_id = "%s-%d" % (prefix, i)
            files = bundle_files(trace, run_id)
            man = manifest(run_id, files)
            d = os.path.join(out, "b%d" % i)
            os.makedirs(d, exist_ok=True)
            for p, data in list(files.items()) + [("bundle.json", man)]:
                with open(os.path.join(d, p), "wb") as f:
                    f.write(data)
            write_tar(os.path.join(out, "b%d.tar" % i), [("bundle.json", man)] + sorted(files.items()))
            ids.write("%d %s\n" % (i, hashlib.sha256(man).hexdigest()))
    files = bundle_files(trace, prefix + "-bad")
    man = manifest(prefix + "-bad", files)
    changed = dict(files, **{"report.md": files["report.md"] + b"changed\n"})
    write_tar(os.path.join(out, "bad-digest.tar"), [("bundle.json", man)] + sorted(changed.items()))
    write_tar(os.path.join(out, "bad-undeclared.tar"),
              [("bundle.json", man)] + sorted(files.items()) + [("extra.txt", b"not declared\n")])
    with open(os.path.join(out, "bad-garbage.tar"), "wb") as f:
        f.write(os.urandom(4096))


if __name__ == "__main__":
    main()
