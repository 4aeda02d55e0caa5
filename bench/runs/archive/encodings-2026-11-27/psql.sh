#!/bin/bash
# usage: psql.sh rw|sl|ro [db] [psql args...]
n=$1; shift; db=${1:-postgres}; shift
case $n in rw) p=55871;; sl) p=55872;; ro) p=55873;; rw2) p=55874;; esac
exec runuser -u pgsentinel_test -- /tmp/enc-study/install/usr/lib/postgresql/15/bin/psql -X -h /tmp/enc-study/c_$n -p $p -U postgres -d $db -v ON_ERROR_STOP=1 "$@"
