#!/bin/bash
# after the sleepers' first pass: F candidates on sleepers, then everything on ro
cd /tmp/enc-study
while kill -0 5689 2>/dev/null; do sleep 2; done
./psql.sh sl enc -q -f cand_f.sql && ./run_all.sh sl f5 f60 f60p
./psql.sh ro enc -q -f stage.sql && ./psql.sh ro enc -q -f cands.sql && ./psql.sh ro enc -q -f colsize.sql \
  && ./psql.sh ro enc -q -f cand_f.sql && ./run_all.sh ro
