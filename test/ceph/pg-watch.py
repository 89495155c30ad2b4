# pg-watch.py CONF KEYFILE STOP OUT: every 0.2 s, the placement groups' states as the mgr
# reports them (`pg stat`), one line per sample in OUT: "<unix time> <pgs> <active pgs>", or
# "<unix time> error <why>" when the mgr does not answer (restarting). One connection for the
# whole run (a `ceph` CLI call costs more than the period on two cores). Ends when STOP exists.
import json
import os
import sys
import time

import rados

conf, keyfile, stop, out = sys.argv[1:5]
cluster = rados.Rados(conffile=conf, name="client.admin", conf={"keyfile": keyfile})
cluster.connect(timeout=30)
cmd = json.dumps({"prefix": "pg stat", "format": "json"})
with open(out, "a", encoding="utf-8") as f:
    while not os.path.exists(stop):
        t = time.time()
        try:
            ret, buf, err = cluster.mgr_command(cmd, b"", timeout=2)
            if ret == 0:
                d = json.loads(buf)
                d = d.get("pg_summary", d)
                active = sum(s["num"] for s in d.get("num_pg_by_state", []) if "active" in s["name"].split("+"))
                f.write("%.3f %d %d\n" % (t, d.get("num_pgs", 0), active))
            else:
                f.write("%.3f error %d\n" % (t, ret))
        except Exception as e:  # the mgr restarting: a timeout or a lost session
            f.write("%.3f error %s\n" % (t, type(e).__name__))
        f.flush()
        time.sleep(max(0.0, 0.2 - (time.time() - t)))
cluster.shutdown()
