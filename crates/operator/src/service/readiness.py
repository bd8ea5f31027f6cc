"""Ratchet's readiness checks, run by the kubelet inside a service container.

Shipped in the service's ConfigMap (the image is the service's own, so the
only runtime it is sure to have is the service's Python). Exit 0 means ready;
anything else, with a one-line reason on stderr, means not ready.

  --patience <seconds> (before the check's name)
      While not ready, look again twice a second for that long before saying
      so: a starting process is then ready as soon as it proves it (its first
      heartbeat, its first answer), not one probe period later. The kubelet's
      timeout must leave room for it and for the interpreter's start.

  http <port> <path> [<json-body>]
      The API answers <path> on localhost without a server error (a GET, or
      with a body a POST of it). 401/403 count as serving: a pipeline that
      authenticates is up; one that cannot (a broken auth configuration, or a
      database it cannot reach to look a user up) answers 500.
  heartbeat <table> <max-age-seconds> <column>=<value>...
      A row of <table> matching every <column>=<value> was written (its
      updated_at, else created_at, in UTC) after this container started and
      within <max-age-seconds>: the service process reported itself alive.
      The value @hostname stands for this container's host name (the pod's
      name, which services register by default). The database URL is
      [database] connection, from OS_DATABASE__CONNECTION.
  heartbeats <table> <max-age-seconds> <counter> <state-file> <column>=<value>...
      As heartbeat, and the row's <counter> column grew since this
      container's first look at it (remembered in <state-file>, which must
      live as long as the pod): a row a service writes as it starts (Cinder
      registers, or records its new versions, before its manager works) is
      not a heartbeat; only the periodic report a working service sends is.
  reported <table> <max-age-seconds> <timestamp-column> <column>=<value>...
      As heartbeat, for a table whose rows carry their report time in a
      column of their own (Neutron's agents: heartbeat_timestamp).
  database
      The database ([database] connection) answers a query: for a process
      whose work is the database's (periodic tasks), with no row of its own.

  A value @env:<NAME> stands for the container's environment variable
  <NAME> (e.g. the node's name an agent reports under).
"""

import datetime
import http.client
import os
import re
import socket
import sys
import time

IDENTIFIER = re.compile(r"^[a-z_][a-z0-9_]*$")


class NotReady(Exception):
    """One look found the process not ready; the reason is the message."""


def fail(reason):
    raise NotReady(reason)


def check_http(port, path, body=None):
    method = "GET" if body is None else "POST"
    headers = {} if body is None else {"Content-Type": "application/json"}
    connection = http.client.HTTPConnection("127.0.0.1", int(port), timeout=5)
    try:
        connection.request(method, path, body=body, headers=headers)
        status = connection.getresponse().status
    except OSError as error:
        fail("%s %s: %s" % (method, path, error))
    if status >= 500:
        fail("%s %s answered %d" % (method, path, status))


def container_started_at():
    """When this container's first process started, as naive UTC."""
    with open("/proc/stat") as stat:
        boot = next(int(l.split()[1]) for l in stat if l.startswith("btime "))
    with open("/proc/1/stat") as stat:
        # Field 22 (starttime), counted after the parenthesised command name.
        ticks = int(stat.read().rsplit(")", 1)[1].split()[19])
    seconds = boot + ticks / os.sysconf("SC_CLK_TCK")
    return datetime.datetime.fromtimestamp(seconds, datetime.timezone.utc).replace(tzinfo=None)


def database_url():
    url = os.environ.get("OS_DATABASE__CONNECTION")
    if not url:
        fail("OS_DATABASE__CONNECTION is not set")
    return url


def filter_value(value):
    """A filter's value, with @hostname and @env:<NAME> resolved."""
    if value == "@hostname":
        return socket.gethostname()
    if value.startswith("@env:"):
        name = value[len("@env:"):]
        if not os.environ.get(name):
            fail("%s is not set" % name)
        return os.environ[name]
    return value


def check_database():
    import sqlalchemy

    engine = sqlalchemy.create_engine(database_url(), poolclass=sqlalchemy.pool.NullPool)
    try:
        with engine.connect() as connection:
            connection.execute(sqlalchemy.text("SELECT 1"))
    except Exception as error:  # any driver's error: not ready, say which
        fail("the database: %s: %s" % (error.__class__.__name__, str(error).splitlines()[0][:200]))


def check_heartbeat(table, max_age, filters, counted=None, stamp=None):
    """`counted`: (counter column, state file) for the `heartbeats` check;
    `stamp`: the column holding the report time, else updated_at or created_at."""
    import sqlalchemy

    url = database_url()
    columns = dict(f.split("=", 1) for f in filters)
    columns = {c: filter_value(v) for c, v in columns.items()}
    counters = [counted[0]] if counted else []
    stamp_columns = [stamp] if stamp else ["updated_at", "created_at"]
    for name in [table, *columns, *counters, *stamp_columns]:
        if not IDENTIFIER.match(name):
            fail("not an identifier: %r" % name)
    # Built with SQLAlchemy's constructs so each dialect quotes the names
    # (`binary` is a reserved word in MySQL).
    # Typed timestamps: drivers that return text (SQLite) are parsed too.
    stamps = [sqlalchemy.column(c, sqlalchemy.DateTime) for c in stamp_columns]
    counted_columns = [sqlalchemy.column(c, sqlalchemy.Integer) for c in counters]
    rows = sqlalchemy.table(table, *stamps, *counted_columns, *(sqlalchemy.column(c) for c in columns))
    if len(stamp_columns) == 1:
        written = rows.c[stamp_columns[0]]
    else:
        written = sqlalchemy.func.coalesce(*(rows.c[c] for c in stamp_columns))
    query = (
        sqlalchemy.select(written, *(rows.c[c] for c in counters))
        .where(*(rows.c[c] == v for c, v in columns.items()))
        .order_by(written.desc())
        .limit(1)
    )
    engine = sqlalchemy.create_engine(url, poolclass=sqlalchemy.pool.NullPool)
    try:
        with engine.connect() as connection:
            row = connection.execute(query).first()
    except Exception as error:  # any driver's error: not ready, say which
        fail("reading %s: %s: %s" % (table, error.__class__.__name__, str(error).splitlines()[0][:200]))
    if row is None or row[0] is None:
        fail("no %s row for %s" % (table, filters))
    seen = row[0]
    started = container_started_at()
    now = datetime.datetime.now(datetime.timezone.utc).replace(tzinfo=None)
    if seen < started:
        fail("last heartbeat %s is older than this container" % seen)
    if (now - seen).total_seconds() > float(max_age):
        fail("last heartbeat %s is older than %ss" % (seen, max_age))
    if counted:
        check_counter_grew(counters[0], row[1], counted[1], started)


def check_counter_grew(counter, count, state_file, started):
    """The counter grew since this container's first look at it: a row written
    at start-up (a service registering itself) is not yet a heartbeat."""
    this_container = started.isoformat()
    try:
        with open(state_file) as state:
            recorded_for, recorded = state.read().split()
    except (OSError, ValueError):
        recorded_for, recorded = None, None
    if recorded_for != this_container:
        with open(state_file, "w") as state:
            state.write("%s %d\n" % (this_container, count or 0))
        fail("%s is %s at the first look; waiting for a heartbeat" % (counter, count))
    if (count or 0) <= int(recorded):
        fail("no heartbeat since start-up (%s still %s)" % (counter, count))


def check(argv):
    if len(argv) in (3, 4) and argv[0] == "http":
        check_http(*argv[1:])
    elif len(argv) >= 4 and argv[0] == "heartbeat":
        check_heartbeat(argv[1], argv[2], argv[3:])
    elif len(argv) >= 6 and argv[0] == "heartbeats":
        check_heartbeat(argv[1], argv[2], argv[5:], counted=(argv[3], argv[4]))
    elif len(argv) >= 5 and argv[0] == "reported":
        check_heartbeat(argv[1], argv[2], argv[4:], stamp=argv[3])
    elif argv == ["database"]:
        check_database()
    else:
        raise ValueError(
            "usage: [--patience <seconds>] http <port> <path> | heartbeat <table> <max-age> <column>=<value>... | "
            "heartbeats <table> <max-age> <counter> <state-file> <column>=<value>... | "
            "reported <table> <max-age> <timestamp-column> <column>=<value>... | database"
        )


def main(argv):
    patience = 0.0
    if argv[:1] == ["--patience"] and len(argv) >= 2:
        try:
            patience = float(argv[1])
        except ValueError:
            patience = -1.0
        if not 0 <= patience <= 600:
            print("not ready: --patience takes seconds from 0 to 600, not %r" % argv[1], file=sys.stderr)
            sys.exit(2)
        argv = argv[2:]
    deadline = time.monotonic() + patience
    while True:
        try:
            check(argv)
            return
        except ValueError as usage:
            print("not ready: %s" % usage, file=sys.stderr)
            sys.exit(2)
        except NotReady as reason:
            if time.monotonic() + 0.5 > deadline:
                print("not ready: %s" % reason, file=sys.stderr)
                sys.exit(1)
        time.sleep(0.5)


if __name__ == "__main__":
    main(sys.argv[1:])
