#!/bin/bash
# usage: export.sh rw|sl|ro T0 T1
# Ground truth: the archive view's rows (as superuser) in [T0, T1], and the
# archived samples of that window (empty ones included); copied into the
# scratch database "enc" of the same cluster with pg_dump.
set -e
n=$1; t0=$2; t1=$3
P=/tmp/enc-study/psql.sh
case $n in rw) p=55871;; sl) p=55872;; ro) p=55873;; rw2) p=55874;; esac
BIN=/tmp/enc-study/install/usr/lib/postgresql/15/bin
$P $n postgres -q <<SQL
DROP TABLE IF EXISTS rows, smp;
CREATE TABLE rows AS SELECT * FROM pgsentinel_ash_archive
 WHERE ash_time >= '$t0' AND ash_time <= '$t1';
CREATE TABLE smp AS SELECT sample_time, sample_id, sample_period, weight,
       active_sessions, blockers IS NOT NULL AS blocked
  FROM pgsentinel_archive_sample WHERE sample_time >= '$t0' AND sample_time <= '$t1';
SELECT count(*) AS rows, count(DISTINCT sample_id) AS samples_with_rows,
       (SELECT count(*) FROM smp) AS samples FROM rows;
SQL
$P $n postgres -qc "DROP DATABASE IF EXISTS enc" -c "CREATE DATABASE enc"
runuser -u pgsentinel_test -- $BIN/pg_dump -h /tmp/enc-study/c_$n -p $p -U postgres -t rows -t smp postgres \
  | $P $n enc -q >/dev/null
