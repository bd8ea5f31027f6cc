"""Ratchet's look for stale service rows in one Nova cell, run by a Job on the
target release's image before the roll (shipped in the ConfigMap).

A row whose host none of the resource's pods is (a compute scaled in, a node
removed, an API pod of an older Ratchet that registered under its own name)
keeps its version in the services table: a nova-compute row holds every
process's `compute = auto` pin at its version for good, and a row older than
the supported window makes Nova refuse to start. This names each such row
and, with RATCHET_STALE_SERVICES=ForceDown, forces it down through Nova's own
objects (what `openstack compute service set --down` does): forced-down rows
count for neither the pin nor the version checks, and the change is undone
by unsetting it. Rows already forced down are left as they are.

  RATCHET_NOVA_HOSTS       the hosts the resource's pods run as, comma-separated
  RATCHET_STALE_SERVICES   ForceDown or Report

The cell is the one of [database] connection (OS_DATABASE__CONNECTION, the
Job group's). The summary goes to the pod's termination message.
"""

import os
import sys

CONFIG_DIR = "/etc/nova/nova.conf.d"
TERMINATION_LOG = "/dev/termination-log"


def main():
    expected = {h for h in os.environ.get("RATCHET_NOVA_HOSTS", "").split(",") if h}
    policy = os.environ.get("RATCHET_STALE_SERVICES", "Report")
    if not expected:
        print("RATCHET_NOVA_HOSTS is empty: every row would look stale", file=sys.stderr)
        sys.exit(1)
    from nova import config, context, objects

    objects.register_all()
    config.parse_args([sys.argv[0], "--config-dir", CONFIG_DIR], init_rpc=False)
    ctx = context.get_admin_context()
    stale = [
        s
        for s in objects.ServiceList.get_all(ctx, disabled=None, set_zones=False)
        if s.host not in expected and not s.forced_down
    ]
    named = []
    for service in stale:
        if policy == "ForceDown":
            service.forced_down = True
            service.save()
        named.append("%s on %s (version %s)" % (service.binary, service.host, service.version))
    done = "forced down" if policy == "ForceDown" else "reported, left as they are"
    summary = "stale services: %s: %s" % (", ".join(named), done) if named else "no stale services"
    print(summary)
    with open(TERMINATION_LOG, "w") as log:
        log.write(summary + "\n")


if __name__ == "__main__":
    main()
