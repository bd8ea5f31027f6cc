"""Registers an OpenStack service in Keystone, idempotently: its service
user (created with the password from its Secret; a user Ratchet did not
create keeps its password), the user's roles in the service project, the
catalogue entry and its public and internal endpoints in the region. Then
logs in as the service user, as its processes will.

Written by Ratchet and run as a Job on the service's own image, which has
keystoneauth1 (keystonemiddleware needs it). Exit codes: 0 registered,
1 failed (retried by the Job), 3 the service user's password is refused,
4 the admin login is refused. The last line printed says why.
"""

import argparse
import os
import sys

from keystoneauth1 import exceptions, session
from keystoneauth1.identity import v3

EXIT_FAILED = 1
EXIT_PASSWORD_REFUSED = 3
EXIT_ADMIN_REFUSED = 4
DOMAIN = "default"


class Refused(Exception):
    def __init__(self, code, message):
        super().__init__(message)
        self.code = code


def login(args, user, password, project=None):
    """A session of `user`, scoped to `project` (unscoped without one)."""
    auth = v3.Password(
        auth_url=args.keystone + "/v3",
        username=user,
        password=password,
        user_domain_id=DOMAIN,
        project_name=project,
        project_domain_id=DOMAIN if project else None,
    )
    return session.Session(auth=auth, timeout=30)


class Admin:
    """Keystone's v3 API at the URL given (not the catalogue's), as admin."""

    def __init__(self, args):
        self.base = args.keystone + "/v3"
        self.session = login(args, "admin", os.environ["RATCHET_ADMIN_PASSWORD"], "admin")

    def call(self, method, path, **kwargs):
        return self.session.request(self.base + path, method, **kwargs)

    def list(self, collection, **params):
        return self.call("GET", f"/{collection}", params=params).json()[collection]

    def create(self, collection, key, body):
        return self.call("POST", f"/{collection}", json={key: body}).json()[key]


def one(items, what):
    if len(items) > 1:
        raise Refused(EXIT_FAILED, f"Keystone holds {len(items)} {what}; expected one")
    return items[0] if items else None


def ensure_named(admin, collection, key, name, body, **filters):
    found = one(admin.list(collection, name=name, **filters), f"{collection} named {name}")
    if found is None:
        found = admin.create(collection, key, dict(body, name=name))
        print(f"created {key} {name}")
    return found


def ensure_region(admin, region):
    try:
        admin.call("GET", f"/regions/{region}")
    except exceptions.NotFound:
        admin.create("regions", "region", {"id": region})
        print(f"created region {region}")


def ensure_user(args, admin, project):
    marker = f"Service user of {args.owner}, managed by Ratchet"
    password = os.environ["RATCHET_SERVICE_PASSWORD"]
    user = one(admin.list("users", name=args.user, domain_id=DOMAIN), f"users named {args.user}")
    if user is None:
        user = admin.create("users", "user", {
            "name": args.user, "domain_id": DOMAIN, "password": password,
            "default_project_id": project["id"], "description": marker, "enabled": True,
        })
        print(f"created user {args.user}")
        return user
    if user.get("description") == marker and not logs_in(args, password):
        admin.call("PATCH", f"/users/{user['id']}", json={"user": {"password": password}})
        print(f"set the password of user {args.user} from {args.password_secret}")
    return user


def logs_in(args, password):
    try:
        login(args, args.user, password).get_token()
        return True
    except exceptions.Unauthorized:
        return False


def ensure_endpoints(args, admin, service):
    for interface in ("public", "internal"):
        found = admin.list("endpoints", service_id=service["id"],
                           interface=interface, region_id=args.region)
        if not found:
            admin.create("endpoints", "endpoint", {
                "service_id": service["id"], "interface": interface,
                "region_id": args.region, "url": args.endpoint, "enabled": True,
            })
            print(f"created the {interface} endpoint {args.endpoint}")
            continue
        first, extra = found[0], found[1:]
        if first["url"] != args.endpoint:
            admin.call("PATCH", f"/endpoints/{first['id']}", json={"endpoint": {"url": args.endpoint}})
            print(f"moved the {interface} endpoint from {first['url']} to {args.endpoint}")
        for stale in extra:
            admin.call("DELETE", f"/endpoints/{stale['id']}")
            print(f"deleted a second {interface} endpoint {stale['url']}")


def register(args):
    admin = Admin(args)
    try:
        admin.session.get_token()
    except exceptions.Unauthorized:
        raise Refused(EXIT_ADMIN_REFUSED,
                      f"Keystone at {args.keystone} refuses the admin password from Secret {args.admin_secret}")
    project = ensure_named(admin, "projects", "project", "service",
                           {"domain_id": DOMAIN, "description": "Service users"}, domain_id=DOMAIN)
    user = ensure_user(args, admin, project)
    for name in args.role:
        role = ensure_named(admin, "roles", "role", name, {})
        admin.call("PUT", f"/projects/{project['id']}/users/{user['id']}/roles/{role['id']}")
    ensure_region(admin, args.region)
    services = [s for s in admin.list("services", type=args.service_type)
                if s.get("name") == args.service_name]
    service = one(services, f"{args.service_type} services named {args.service_name}")
    if service is None:
        service = admin.create("services", "service", {
            "name": args.service_name, "type": args.service_type, "enabled": True,
        })
        print(f"created service {args.service_name} ({args.service_type})")
    ensure_endpoints(args, admin, service)
    try:
        login(args, args.user, os.environ["RATCHET_SERVICE_PASSWORD"], "service").get_token()
    except exceptions.Unauthorized:
        raise Refused(EXIT_PASSWORD_REFUSED,
                      f"Keystone refuses user {args.user}'s password from Secret {args.password_secret}: "
                      "the user existed before Ratchet registered it, so Ratchet does not reset it; "
                      "put the user's password in the Secret, or reset it in Keystone")
    print(f"registered: user {args.user}, service {args.service_name} ({args.service_type}) "
          f"at {args.endpoint} in {args.region}")


def fail(code, message):
    """Says why in the termination message (what the condition quotes)."""
    print(message, file=sys.stderr)
    try:
        with open("/dev/termination-log", "w") as log:
            log.write(message)
    except OSError:
        pass
    return code


def main():
    parser = argparse.ArgumentParser()
    for option in ("keystone", "admin-secret", "user", "password-secret", "region",
                   "service-name", "service-type", "endpoint", "owner"):
        parser.add_argument("--" + option, required=True)
    parser.add_argument("--role", action="append", required=True)
    args = parser.parse_args()
    try:
        register(args)
    except Refused as refused:
        return fail(refused.code, str(refused))
    except exceptions.ConnectFailure as e:
        return fail(EXIT_FAILED, f"Keystone at {args.keystone} unreachable: {e}")
    except exceptions.ClientException as e:
        return fail(EXIT_FAILED, f"Keystone at {args.keystone} answered: {e}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
