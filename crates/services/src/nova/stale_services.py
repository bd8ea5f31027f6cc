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
by unsetting it. Rows already forced down are named as such (a retried Job
reports what an earlier attempt did).

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
    # With RPC initialised as nova-manage does: saving a service sends a
    # status notification through the notifier (a no-op unless
    # [oslo_messaging_notifications] enables one), which is None otherwise.
    config.parse_args([sys.argv[0], "--config-dir", CONFIG_DIR])
    ctx = context.get_admin_context()
    stale = [
        s
        for s in objects.ServiceList.get_all(ctx, disabled=None, set_zones=False)
        if s.host not in expected
    ]
    named = []
    for service in stale:
        if service.forced_down:
            # By an operator, or by an earlier attempt of this Job.
            outcome = "already forced down"
        elif policy == "ForceDown":
            service.forced_down = True
            service.save()
            outcome = "forced down"
        else:
            outcome = "reported, left as it is"
        named.append(
            "%s on %s (version %s): %s" % (service.binary, service.host, service.version, outcome)
        )
    summary = "stale services: %s" % "; ".join(named) if named else "no stale services"
    print(summary)
    with open(TERMINATION_LOG, "w") as log:
        log.write(summary + "\n")


if __name__ == "__main__":
    main()
