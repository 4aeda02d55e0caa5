--
-- Settings: every 1.4 name with its 1.4 meaning, ranges stated in errors,
-- bad values refused without changing anything.
--
SELECT name, setting, unit, vartype, context, min_val, max_val
FROM pg_settings
WHERE name LIKE 'pgsentinel%'
ORDER BY name;

-- Values users already have in postgresql.conf keep their meaning.
ALTER SYSTEM SET pgsentinel_ash.sampling_period = 1;
ALTER SYSTEM SET pgsentinel_ash.sampling_period = 0.1;
ALTER SYSTEM RESET pgsentinel_ash.sampling_period;

-- Out of range, wrong type: refused, with the allowed range.
ALTER SYSTEM SET pgsentinel_ash.sampling_period = 0;
ALTER SYSTEM SET pgsentinel_ash.sampling_period = -1;
ALTER SYSTEM SET pgsentinel_ash.sampling_period = 0.001;
ALTER SYSTEM SET pgsentinel_ash.sampling_period = 100000;
ALTER SYSTEM SET pgsentinel_ash.sampling_period = 'often';
ALTER SYSTEM SET pgsentinel_ash.max_entries = 999;
ALTER SYSTEM SET pgsentinel_ash.max_entries = -5;
ALTER SYSTEM SET pgsentinel_ash.max_entries = 1.5;
ALTER SYSTEM SET pgsentinel_ash.max_entries = 'many';
ALTER SYSTEM SET pgsentinel_ash.max_entries = 100000000000;
ALTER SYSTEM SET pgsentinel_ash.text_area_size = 10;
ALTER SYSTEM SET pgsentinel_ash.text_area_size = '2TB';
ALTER SYSTEM SET pgsentinel_ash.track_idle_trans = 'maybe';
ALTER SYSTEM SET pgsentinel_pgssh.max_entries = 0;
ALTER SYSTEM SET pgsentinel_pgssh.enable = 2;
ALTER SYSTEM SET pgsentinel.save_history = 'sometimes';

-- Nothing of the above reached postgresql.auto.conf.
SELECT name, setting FROM pg_file_settings
WHERE name LIKE 'pgsentinel%' AND sourcefile LIKE '%postgresql.auto.conf'
ORDER BY name;

-- Reloadable settings cannot be SET in a session; restart-only ones neither.
SET pgsentinel_ash.sampling_period = 0.5;
SET pgsentinel_ash.max_entries = 5000;

-- Unknown names under our prefixes are refused (prefixes are reserved).
SET pgsentinel_ash.no_such_setting = 1;
