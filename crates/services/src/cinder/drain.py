"""Ratchet's drain of a Cinder service host before its restart, and its return
after (docs/drain.md). Shipped in the ConfigMap; run as a Job on the service's
image, so it uses only what every Cinder image has (the standard library,
SQLAlchemy with the database driver, keystoneauth1).

  drain --api URL --binary B --host H --bound SECONDS --quiet SECONDS [--disable]
      With --disable, disables the service through Cinder's API
      (os-services/disable-log-reason, the reason naming Ratchet): the
      scheduler sends it no new volume. Then waits until none of the host's
      volumes, snapshots or backups is in a transitional state for --quiet
      seconds in a row (a scheduling decision taken before the disable
      lands within them), or until --bound seconds passed. Exit 0 either way: the
      termination message says how long it took and, at the bound, what was
      still in flight.
  undrain --api URL --binary B --host H
      Enables the service again if its disabled reason is Ratchet's (a
      service an operator disabled stays disabled), through Cinder's own
      objects: the API's enable does not enable in these releases.

The API (for the disable) is reached by the Service's name. With `[DEFAULT] auth_strategy =
keystone` the Job logs in as the service user of `[service_user]` (its
password from OS_SERVICE_USER__PASSWORD); otherwise Cinder's noauth
middleware takes an admin token. The host's operations are read from the
database of `[database] connection` (OS_DATABASE__CONNECTION), read only.
"""

import argparse
import configparser
import glob
import json
import os
import sys
import time
import urllib.error
import urllib.request

CONFIG_DIR = "/etc/cinder/cinder.conf.d"
TERMINATION_LOG = "/dev/termination-log"
REASON = "Ratchet: drained for a restart"
POLL = 0.5

VOLUME_STATES = (
    "creating", "deleting", "attaching", "detaching", "backing-up",
    "restoring-backup", "downloading", "uploading", "extending", "retyping",
    "maintenance", "reserved", "awaiting-transfer",
)
SNAPSHOT_STATES = ("creating", "deleting", "backing-up", "restoring")
BACKUP_STATES = ("creating", "restoring", "deleting")


def config():
    parser = configparser.RawConfigParser(strict=False, interpolation=None)
    parser.read(sorted(glob.glob(os.path.join(CONFIG_DIR, "*.conf"))))
    return parser


def option(parser, section, name, default=None):
    variable = "OS_%s__%s" % (section.upper(), name.upper())
    if os.environ.get(variable):
        return os.environ[variable]
    if parser.has_option(section, name):
        return parser.get(section, name)
    return default


class Api:
    """Cinder's API as the service user, or as noauth's admin."""

    def __init__(self, url):
        self.url = url.rstrip("/")
        parser = config()
        if option(parser, "DEFAULT", "auth_strategy", "keystone") == "keystone":
            from keystoneauth1 import session
            from keystoneauth1.identity import v3

            auth = v3.Password(
                auth_url=option(parser, "service_user", "auth_url"),
                username=option(parser, "service_user", "username"),
                password=option(parser, "service_user", "password"),
                project_name=option(parser, "service_user", "project_name"),
                user_domain_name=option(parser, "service_user", "user_domain_name", "Default"),
                project_domain_name=option(parser, "service_user", "project_domain_name", "Default"),
            )
            logged_in = session.Session(auth=auth)
            self.token = logged_in.get_token()
        else:
            self.token = "ratchet:admin"

    def put(self, path, body):
        # No project in the path (Cinder takes it from the token since 3.67;
        # noauth's project is no UUID and fails `project_id_regex` there).
        request = urllib.request.Request(
            "%s/v3/%s" % (self.url, path),
            data=json.dumps(body).encode(),
            method="PUT",
            headers={
                "X-Auth-Token": self.token,
                "Content-Type": "application/json",
                "OpenStack-API-Version": "volume 3.67",
            },
        )
        for attempt in range(10):
            try:
                with urllib.request.urlopen(request, timeout=30) as answer:
                    return json.load(answer)
            except urllib.error.HTTPError as error:
                if error.code < 500 or attempt == 9:
                    sys.exit("PUT %s answered %d: %s" % (path, error.code, error.read()[:300]))
            except OSError as error:
                if attempt == 9:
                    sys.exit("PUT %s: %s" % (path, error))
            time.sleep(2)


def in_flight(connection, binary, host):
    """The host's operations in a transitional state, as `<kind> <id> <status>`."""
    import sqlalchemy

    def listed(states):
        return ", ".join("'%s'" % s for s in states)

    if binary == "cinder-volume":
        # A volume's host is `<host>#<pool>`; its snapshots and backups are
        # served through it.
        on_host = "(v.host = :host OR v.host LIKE :pool)"
        queries = [
            "SELECT 'volume', v.id, v.status FROM volumes v WHERE v.deleted = 0 AND %s "
            "AND v.status IN (%s)" % (on_host, listed(VOLUME_STATES)),
            "SELECT 'snapshot', s.id, s.status FROM snapshots s JOIN volumes v ON v.id = s.volume_id "
            "WHERE s.deleted = 0 AND %s AND s.status IN (%s)" % (on_host, listed(SNAPSHOT_STATES)),
            "SELECT 'backup', b.id, b.status FROM backups b JOIN volumes v ON v.id = b.volume_id "
            "WHERE b.deleted = 0 AND %s AND b.status IN (%s)" % (on_host, listed(BACKUP_STATES)),
        ]
    else:
        queries = [
            "SELECT 'backup', b.id, b.status FROM backups b WHERE b.deleted = 0 "
            "AND b.host = :host AND b.status IN (%s)" % listed(BACKUP_STATES),
        ]
    found = []
    for query in queries:
        rows = connection.execute(sqlalchemy.text(query), {"host": host, "pool": host + "#%"})
        found.extend("%s %s %s" % tuple(row) for row in rows)
    return found


def drain(args):
    import sqlalchemy

    started = time.monotonic()
    if args.disable:
        Api(args.api).put(
            "os-services/disable-log-reason",
            {"binary": args.binary, "host": args.host, "disabled_reason": REASON},
        )
    engine = sqlalchemy.create_engine(
        os.environ["OS_DATABASE__CONNECTION"], poolclass=sqlalchemy.pool.NullPool
    )
    quiet_since = None
    busy = []
    while True:
        with engine.connect() as connection:
            busy = in_flight(connection, args.binary, args.host)
        now = time.monotonic()
        if busy:
            quiet_since = None
        elif quiet_since is None:
            quiet_since = now
        if quiet_since is not None and now - quiet_since >= args.quiet:
            outcome = "nothing in flight"
            break
        if now - started >= args.bound:
            outcome = "bound of %d s reached, still in flight: %s" % (args.bound, ", ".join(busy))
            break
        time.sleep(POLL)
    taken = "disabled, " if args.disable else ""
    return "%s %s %sdrained in %.1f s: %s" % (
        args.binary, args.host, taken, time.monotonic() - started, outcome)


def undrain(args):
    """Enables the service if Ratchet disabled it: one an operator disabled
    for a reason of their own stays disabled. Through Cinder's own objects,
    as the API's `os-services/enable` would do: in cinder 28.0.0 and 29.0.0
    that call answers 200 "enabled" and saves the service unchanged
    (cinder/api/v3/services.py, `ServiceController.enable`), so a back end
    enabled through it stays out of scheduling (docs/drain.md)."""
    from oslo_config import cfg

    from cinder import context, objects
    from cinder.common import config  # noqa: F401 (registers Cinder's options)

    objects.register_all()
    cfg.CONF(["--config-dir", CONFIG_DIR], project="cinder")
    service = objects.Service.get_by_args(context.get_admin_context(), args.host, args.binary)
    if not service.disabled or service.disabled_reason != REASON:
        return "%s %s was not disabled by Ratchet: left as it is" % (args.binary, args.host)
    service.disabled = False
    service.disabled_reason = None
    service.save()
    return "%s %s enabled" % (args.binary, args.host)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("action", choices=["drain", "undrain"])
    parser.add_argument("--api", required=True)
    parser.add_argument("--binary", required=True, choices=["cinder-volume", "cinder-backup"])
    parser.add_argument("--host", required=True)
    parser.add_argument("--bound", type=int, default=120)
    parser.add_argument("--quiet", type=float, default=3.0)
    parser.add_argument("--disable", action="store_true")
    args = parser.parse_args()
    summary = drain(args) if args.action == "drain" else undrain(args)
    print(summary)
    with open(TERMINATION_LOG, "w") as log:
        log.write(summary + "\n")


if __name__ == "__main__":
    main()
