#!/bin/bash
# usage: run_all.sh rw|sl|ro [cand ...]  -- every candidate, WAL with and without a checkpoint before, exactness
set -e
n=$1; shift
P="/tmp/enc-study/psql.sh $n enc -q"
declare -A MK ST RB
MK[A]="SELECT make_a()";                                   ST[A]=5;  RB[A]="rebuild_a()"
MK[b]="SELECT make_b()";                                   ST[b]=5;  RB[b]="rebuild_b()"
c() { MK[$1]="SELECT make_c('$1', $2)"; ST[$1]=$3; RB[$1]="rebuild_c('$1')"; }
# name  bsz sess_sort chain tpl blob comp ttt          step
c c5    "5, false, false, false, false, 'lz4'"          5
c c5s   "5, true, true, false, false, 'lz4'"            5
c c60s  "60, true, true, false, false, 'lz4'"           60
c d5    "5, true, true, true, false, 'lz4'"             5
c d5t   "5, true, true, true, false, 'lz4', 128"        5
c d60   "60, true, true, true, false, 'lz4'"            60
c d60t  "60, true, true, true, false, 'lz4', 128"       60
c d60p  "60, true, true, true, false, 'pglz'"           60
c d60ts "60, false, true, true, false, 'lz4'"           60
c d60ns "60, true, false, true, false, 'lz4'"           60
c e5    "5, true, true, true, true, 'lz4'"              5
c e60   "60, true, true, true, true, 'lz4'"             60
c e60p  "60, true, true, true, true, 'pglz'"            60
f() { MK[$1]="SELECT make_f('$1', $2)"; ST[$1]=$3; RB[$1]="rebuild_f('$1')"; }
f f5    "5, 'lz4'"    5
f f60   "60, 'lz4'"   60
f f60p  "60, 'pglz'"  60
LIST=${@:-A b c5 c5s c60s d5 d5t d60 d60t d60p d60ts d60ns e5 e60 e60p f5 f60 f60p}
for cand in $LIST; do
  $P -c "DELETE FROM results WHERE cand = '$cand'" -c "DELETE FROM res_wal WHERE cand = '$cand'"
  for ck in true false; do
    $P -v cand=$cand -v maker="${MK[$cand]}" -v step=${ST[$cand]} -v ckpt=$ck -f /tmp/enc-study/measure.sql
  done
  $P -v cand=$cand -v rebuild="${RB[$cand]}" -f /tmp/enc-study/check.sql
done
