#!/bin/bash
# rw: pgbench -i -s 10 then read-write -c 20 -j 2 for 240 s; sl: 50 x pg_sleep(600) for ~200 s
BIN=/tmp/enc-study/install/usr/lib/postgresql/15/bin
U="runuser -u pgsentinel_test --"
case $1 in
rw) $U $BIN/pgbench -i -q -s 10 -h /tmp/enc-study/c_rw -p 55871 -U postgres postgres
    date -u +%FT%TZ > /tmp/enc-study/rw.start
    $U $BIN/pgbench -n -c 20 -j 2 -T 240 -h /tmp/enc-study/c_rw -p 55871 -U postgres postgres > /tmp/enc-study/rw.pgbench.out 2>&1
    date -u +%FT%TZ > /tmp/enc-study/rw.end ;;
sl) date -u +%FT%TZ > /tmp/enc-study/sl.start
    for i in $(seq 50); do $U $BIN/psql -XAtq -h /tmp/enc-study/c_sl -p 55872 -U postgres -c "SELECT pg_sleep(600)" >/dev/null 2>&1 & done
    sleep 200
    $U $BIN/psql -XAtq -h /tmp/enc-study/c_sl -p 55872 -U postgres -c "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity WHERE wait_event='PgSleep'"
    date -u +%FT%TZ > /tmp/enc-study/sl.end ;;
esac
# ro: pgbench -S -c 20 -j 2 for 180 s on its own cluster (appended case)
if [ "$1" = ro ]; then
  $U $BIN/pgbench -i -q -s 10 -h /tmp/enc-study/c_ro -p 55873 -U postgres postgres
  date -u +%FT%TZ > /tmp/enc-study/ro.start
  $U $BIN/pgbench -n -S -c 20 -j 2 -T 180 -h /tmp/enc-study/c_ro -p 55873 -U postgres postgres > /tmp/enc-study/ro.pgbench.out 2>&1
  date -u +%FT%TZ > /tmp/enc-study/ro.end
fi
# rw2: a longer read-write run (480 s) on its own cluster (appended case)
if [ "$1" = rw2 ]; then
  $U $BIN/pgbench -i -q -s 10 -h /tmp/enc-study/c_rw2 -p 55874 -U postgres postgres
  date -u +%FT%TZ > /tmp/enc-study/rw2.start
  $U $BIN/pgbench -n -c 20 -j 2 -T 480 -h /tmp/enc-study/c_rw2 -p 55874 -U postgres postgres > /tmp/enc-study/rw2.pgbench.out 2>&1
  date -u +%FT%TZ > /tmp/enc-study/rw2.end
fi
