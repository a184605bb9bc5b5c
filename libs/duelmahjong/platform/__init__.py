"""Service plumbing shared by the four services: config, logging, metrics, gRPC, NATS, Postgres.

Importing the package turns gRPC's fork support off for this process and the ones it starts
(``GRPC_ENABLE_FORK_SUPPORT=false``, unless set already). We start other processes only by fork +
exec (the stack, embedded NATS and Postgres, benches), never fork alone, so the support buys nothing
— and with it on, a child forked while the parent's gRPC threads are busy can restart gRPC's poller
before its exec and abort on the parent's closed epoll fd (grpc/grpc#37710, #43055: a service of the
stack "exited with code -6 while starting"). gRPC reads the setting when it initialises, so it must
be in the environment before ``grpc`` is imported: here, because a package runs before its modules,
and the modules that set gRPC up (``grpc_server``, ``interceptors``, ``stack``) are this package's.
The rules and the engine never import it, so using them has no such effect.
"""

import os as _os

_os.environ.setdefault("GRPC_ENABLE_FORK_SUPPORT", "false")
