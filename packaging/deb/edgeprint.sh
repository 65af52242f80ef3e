#!/bin/sh
# /usr/bin/edgeprint of the Debian package: runs the single-file build (make dist), installed
# as /usr/lib/edgeprint/edgeprint, with the modules it unpacks on its first run kept in the
# package's own cache, /var/cache/edgeprint/shiv, instead of shiv's default ~/.shiv: a run as
# root leaves nothing in /root, and apt purge removes the cache with the package. The unit
# sets the same SHIV_ROOT for the service user. Whoever cannot write the cache (a user who is
# neither root nor edgeprint) gets shiv's default in their own home; a SHIV_ROOT already in
# the environment is kept.
if [ -z "${SHIV_ROOT:-}" ] && [ -d /var/cache/edgeprint/shiv ] && [ -w /var/cache/edgeprint/shiv ]; then
    SHIV_ROOT=/var/cache/edgeprint/shiv
    export SHIV_ROOT
fi
exec /usr/lib/edgeprint/edgeprint "$@"
