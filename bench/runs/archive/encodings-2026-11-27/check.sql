-- exactness and read cost of a candidate: psql -v cand=NAME -v rebuild='rebuild_x(...)'
\set ON_ERROR_STOP 1
SET client_min_messages = warning;
SELECT :rebuild AS q \gset
SELECT count(*) AS d1 FROM ((:q) EXCEPT ALL (SELECT * FROM rows)) x \gset
SELECT count(*) AS d2 FROM ((SELECT * FROM rows) EXCEPT ALL (:q)) x \gset
SELECT clock_timestamp() AS c0 \gset
SELECT sum(length(x::text)) FROM (:q) x \gset
SELECT clock_timestamp() AS c1 \gset
SELECT clock_timestamp() AS c2 \gset
SELECT sum(length(x::text)) FROM (:q) x \gset
SELECT clock_timestamp() AS c3 \gset
UPDATE results SET diff1 = :d1, diff2 = :d2,
   rebuild_ms = least(extract(epoch FROM :'c1'::timestamptz - :'c0'::timestamptz),
                      extract(epoch FROM :'c3'::timestamptz - :'c2'::timestamptz)) * 1000,
   rebuilt_samples = (SELECT count(*) FROM smp2)
 WHERE cand = :'cand';
SELECT :'cand' AS cand, :d1 AS rebuilt_not_in_rows, :d2 AS rows_not_rebuilt;
