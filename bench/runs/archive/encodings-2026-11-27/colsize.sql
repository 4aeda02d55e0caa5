-- bytes of each column of a batch table as stored (compressed, in line or in TOAST)
CREATE OR REPLACE FUNCTION col_sizes(tbl text) RETURNS TABLE (col text, bytes bigint, raw_bytes bigint) LANGUAGE plpgsql AS $$
DECLARE c record; b bigint; r bigint;
BEGIN
  FOR c IN SELECT attname FROM pg_attribute WHERE attrelid = tbl::regclass AND attnum > 0 AND NOT attisdropped ORDER BY attnum LOOP
    EXECUTE format('SELECT sum(pg_column_size(%1$I)), sum(octet_length(%1$I::text)) FROM %2$I', c.attname, tbl) INTO b, r;
    col := c.attname; bytes := b; raw_bytes := r; RETURN NEXT;
  END LOOP;
END $$;
