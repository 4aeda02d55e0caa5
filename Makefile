# pgsentinel -- Active Session History for PostgreSQL (PGXS build)
#
#   make PG_CONFIG=/path/to/pg_config            build
#   make PG_CONFIG=... install                   install into that PostgreSQL
#   make PG_CONFIG=... installcheck              pg_regress, isolation (own
#                                                preloaded temporary instance),
#                                                then TAP (needs PG's TAP modules)
#
# All tests on PostgreSQL 15 and 18 in one go: scripts/test-all.sh

MODULE_big = pgsentinel
OBJS = \
	src/pgsentinel.o \
	src/guc.o \
	src/shmem.o \
	src/ring.o \
	src/text_area.o \
	src/persist.o \
	src/hooks.o \
	src/sampler.o \
	src/backend_status_reader.o \
	src/queryid_backfill.o \
	src/blockers.o \
	src/ash_view.o \
	src/ash_fdw.o \
	src/status.o \
	src/reset.o \
	src/pgssh_request.o \
	src/pgssh_worker.o \
	src/pgssh_view.o \
	src/samples_view.o \
	src/columns.o \
	src/legacy_get_parsedinfo.o

EXTENSION = pgsentinel
DATA = \
	pgsentinel--1.0--1.3.1.sql \
	pgsentinel--1.3.1--1.4.0.sql \
	pgsentinel--1.4.0.sql \
	pgsentinel--1.4.0--1.5.0.sql \
	pgsentinel--1.5.0--1.5.1.sql \
	pgsentinel--1.5.1--2.0.0.sql
DATA_built = pgsentinel--2.0.0--2.1.0.sql
PGFILEDESC = "pgsentinel - active session history"

PG_CPPFLAGS = -I$(srcdir)/src

# Regression and isolation tests run in their own preloaded temporary instance
# (--temp-instance), so they never depend on a system cluster.
REGRESS = setup ash_views settings status redaction pgssh upgrade reset hostile_schema permissions reports
REGRESS_OPTS = --temp-config=$(srcdir)/test/pgsentinel.conf --temp-instance=./tmp_check
ISOLATION = lock_waiter lock_queue lock_upgrade truncate_waiter idle_in_transaction parallel_leader concurrent_readers
ISOLATION_OPTS = --temp-config=$(srcdir)/test/pgsentinel.conf --temp-instance=./tmp_check_iso
TAP_TESTS = 1

EXTRA_CLEAN = tmp_check tmp_check_iso results output_iso log

PG_CONFIG ?= pg_config
PGXS := $(shell $(PG_CONFIG) --pgxs)
include $(PGXS)

# The 2.0.0 -> 2.1.0 script is assembled from one file per concern, in the
# order of their names (after the include: srcdir is set there).
UPDATE_2_1_0_PARTS = $(sort $(wildcard $(srcdir)/sql-src/2.0.0--2.1.0/*.sql))
pgsentinel--2.0.0--2.1.0.sql: $(UPDATE_2_1_0_PARTS)
	cat $^ > $@

# Warnings are errors on every supported version.
override CFLAGS += -Werror

# A full install script left by an earlier build would shadow the update
# chain that fresh installs follow: remove it before installing.
install: remove-stale-install-scripts
.PHONY: remove-stale-install-scripts
remove-stale-install-scripts:
	rm -f '$(DESTDIR)$(datadir)/$(datamoduledir)/pgsentinel--2.0.0.sql' '$(DESTDIR)$(datadir)/$(datamoduledir)/pgsentinel--2.1.0.sql'

# The pg_regress and isolation suites under AddressSanitizer and UBSan, on a
# PostgreSQL 15 built for it (scripts/sanitize-check.sh; its own pg_config,
# whatever PG_CONFIG says).  After the include, so that `make` still builds.
.PHONY: sanitize-check
sanitize-check:
	bash $(srcdir)/scripts/sanitize-check.sh
