"""Duel Mahjong backend: pure libraries (rules, engine), service plumbing (platform) and the CLI.

Generated protobuf code lives in ``duelmahjong.v1`` (``make gen``).
"""

import os as _os

# Our processes start others only by fork + exec (the stack, embedded NATS and Postgres, benches),
# never fork alone, so gRPC's fork support buys nothing — and with it on, a child forked while the
# parent's gRPC threads are busy can restart gRPC's poller before its exec and abort on the parent's
# closed epoll fd (grpc/grpc#37710, #43055: a service of the stack "exited with code -6 while
# starting"). Read when gRPC initialises, so it is set before anything imports grpc.
_os.environ.setdefault("GRPC_ENABLE_FORK_SUPPORT", "false")
