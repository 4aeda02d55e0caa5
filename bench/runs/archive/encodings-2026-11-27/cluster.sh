#!/bin/bash
# usage: cluster.sh start|stop NAME PORT   -- throwaway cluster as pgsentinel_test, unix socket only
set -e
BIN=/tmp/enc-study/install/usr/lib/postgresql/15/bin
act=$1; name=$2; port=$3
D=/tmp/enc-study/c_$name
U="runuser -u pgsentinel_test --"
if [ "$act" = start ]; then
  mkdir -p $D; chown pgsentinel_test $D; chmod 755 $D
  $U $BIN/initdb -D $D/data -A trust -U postgres >/dev/null
  cat >> $D/data/postgresql.conf <<CONF
port = $port
listen_addresses = ''
unix_socket_directories = '$D'
shared_preload_libraries = 'pg_stat_statements,pgsentinel'
max_connections = 200
max_worker_processes = 16
autovacuum = on
checkpoint_timeout = '1h'
max_wal_size = '10GB'
log_checkpoints = on
pgsentinel_ash.sampling_period = 1
pgsentinel_archive.keep_one_in = 1
pgsentinel_archive.interval = '5s'
CONF
  $U $BIN/pg_ctl -D $D/data -l $D/log -w start
elif [ "$act" = stop ]; then
  $U $BIN/pg_ctl -D $D/data -m fast stop
fi
