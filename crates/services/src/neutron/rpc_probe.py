"""Ratchet's readiness check of a neutron-rpc-server pod, run by the kubelet
inside its container (shipped in the ConfigMap beside neutron.conf).

An RPC server writes nothing of its own anywhere: the only proof that it
works is an answer to an RPC call. This asks the server of this pod (its
queue is named after `[DEFAULT] host`, the pod's name) over the message bus
whether its database is alive (`has_alive_neutron_server`, which every
neutron RPC server answers on `q-plugin` since RPC API 1.4). Exit 0 when it
answers true; otherwise 1 with a one-line reason on stderr.

Neutron's RPC lives on the control exchange `neutron` (neutron_lib sets it),
not oslo.messaging's default `openstack`.
"""

import os
import socket
import sys

TIMEOUT_SECONDS = 5


def fail(reason):
    print("not ready: " + reason, file=sys.stderr)
    sys.exit(1)


def main():
    url = os.environ.get("OS_DEFAULT__TRANSPORT_URL")
    if not url:
        fail("OS_DEFAULT__TRANSPORT_URL is not set")
    import oslo_messaging
    from oslo_config import cfg

    # The global configuration: oslo.messaging registers the options its
    # client reads there (a private ConfigOpts lacks its metrics group).
    cfg.CONF([], project="neutron")
    transport = oslo_messaging.get_rpc_transport(cfg.CONF, url=url)
    target = oslo_messaging.Target(
        exchange="neutron", topic="q-plugin", server=socket.gethostname(), version="1.4"
    )
    client = oslo_messaging.get_rpc_client(transport, target, timeout=TIMEOUT_SECONDS)
    # The server builds its request context from this dictionary.
    context = {"is_admin": True, "user_id": None, "project_id": None}
    try:
        alive = client.call(context, "has_alive_neutron_server")
    except Exception as error:  # a timeout, a refused connection: say which
        fail("has_alive_neutron_server: %s: %s" % (error.__class__.__name__, str(error)[:200]))
    finally:
        transport.cleanup()
    if not alive:
        fail("the RPC server answered that its database is not alive")


if __name__ == "__main__":
    main()
