# pgsentinel -- Active Session History for PostgreSQL (PGXS build)
#
#   make PG_CONFIG=/path/to/pg_config            build
#   make PG_CONFIG=... install                   install into that PostgreSQL
#   make PG_CONFIG=... installcheck              pg_regress, isolation (against
#                                                the running server, which must
#                                                preload pgsentinel: see below;
#                                                PGS_TEMP_INSTANCE=1 for a
#                                                throwaway one), then TAP (needs
#                                                PG's TAP modules)
#   make dist                                    pgsentinel-VERSION.zip for PGXN
#
# All tests on PostgreSQL 15 to 18 in one go: scripts/test-all.sh

MODULE_big = pgsentinel
# The C files, in folders that follow the data's way: the sampler takes it
# from the sessions (sample/), the rings and the text area keep it (store/),
# the views read it (read/), the statements history adds pg_stat_statements'
# counters to it (statements/), the archiver moves it into tables (archive/)
# and a repository gathers servers' archives (fleet/).  What all of them
# share is in src/ itself.
OBJS = \
	src/module.o \
	src/guc.o \
	src/shmem.o \
	src/status.o \
	src/reset.o \
	src/db_worker.o \
	src/sample/hooks.o \
	src/sample/sampler.o \
	src/sample/backend_status_reader.o \
	src/sample/queryid_backfill.o \
	src/sample/blockers.o \
	src/store/ring.o \
	src/store/text_area.o \
	src/store/persist.o \
	src/read/ash_view.o \
	src/read/ash_fdw.o \
	src/read/samples_view.o \
	src/read/columns.o \
	src/read/lock_target.o \
	src/read/legacy_get_parsedinfo.o \
	src/statements/pgssh_request.o \
	src/statements/pgssh_worker.o \
	src/statements/pgssh_view.o \
	src/archive/archiver.o \
	src/archive/archive_step.o \
	src/archive/archive_statements.o \
	src/archive/batch_format.o \
	src/archive/batch_rows.o \
	src/archive/batch_samples.o \
	src/archive/batch_times.o \
	src/archive/packed_ints.o \
	src/archive/statement_rows.o \
	src/archive/rollup_rows.o \
	src/archive/text_template.o \
	src/fleet/fleet.o \
	src/fleet/transaction_block.o

EXTENSION = pgsentinel
DATA = \
	pgsentinel--1.0--1.3.1.sql \
	pgsentinel--1.3.1--1.4.0.sql \
	pgsentinel--1.4.0.sql \
	pgsentinel--1.4.0--1.5.0.sql \
	pgsentinel--1.5.0--1.5.1.sql \
	pgsentinel--1.5.1--2.0.0.sql
DATA_built = pgsentinel--2.1.0.sql pgsentinel--2.0.0--2.1.0.sql
PGFILEDESC = "pgsentinel - active session history"

# src/columns_gen.h is generated in the build's own src/ (columns.awk)
PG_CPPFLAGS = -Isrc -I$(srcdir)/src
# the archive's batches are compressed with zstd (src/archive/batch_format.c)
SHLIB_LINK += -lzstd

# Regression and isolation tests.  `make installcheck` runs them, as PGXS
# does, against the running server that PGHOST, PGPORT and PGUSER name; that
# server must preload pgsentinel with the settings of test/pgsentinel.conf,
# which test/installcheck-preflight.sh checks first (it stops with what to do
# when they are missing).  With PGS_TEMP_INSTANCE=1 (scripts/test-all.sh
# sets it) they run in preloaded throwaway servers of their own instead
# (--temp-instance), so they never depend on another cluster.
REGRESS = setup ash_views settings status redaction pgssh upgrade reset archive archive_statements hostile_schema permissions reports fleet prometheus
ISOLATION = lock_waiter lock_queue lock_upgrade truncate_waiter plan_waiter utility_query idle_in_transaction idle_blocker parallel_leader concurrent_readers
ifdef PGS_TEMP_INSTANCE
REGRESS_OPTS = --temp-config=$(srcdir)/test/pgsentinel.conf --temp-instance=./tmp_check
ISOLATION_OPTS = --temp-config=$(srcdir)/test/pgsentinel.conf --temp-instance=./tmp_check_iso
endif
TAP_TESTS = 1

EXTRA_CLEAN = tmp_check tmp_check_iso results output_iso log pgsentinel-*.zip src/columns_gen.h \
	pgsentinel--2.1.0.sql.frag pgsentinel--2.0.0--2.1.0.sql.frag

PG_CONFIG ?= pg_config
PGXS := $(shell $(PG_CONFIG) --pgxs)
include $(PGXS)

# Every object depends on every header, in src/ and in its subsystems'
# folders: PGXS knows of no header dependency unless PostgreSQL was
# configured with --enable-depend.
$(OBJS): $(wildcard $(srcdir)/src/*.h $(srcdir)/src/*/*.h) src/columns_gen.h

# The columns of the rows pgsentinel returns are defined once, in
# src/columns.txt: the C header and the SQL scripts' column lists are made
# of it (src/columns.awk says how).
# (awk, not PGXS's $(AWK): that names the awk of the machine PostgreSQL
# was built on, gawk for some packaged builds, absent here)
COLUMNS_AWK = awk -f $(srcdir)/src/columns.awk
src/columns_gen.h: $(srcdir)/src/columns.txt $(srcdir)/src/columns.awk
	@mkdir -p src
	$(COLUMNS_AWK) -v out=header $(srcdir)/src/columns.txt > $@.tmp && mv $@.tmp $@

# The 2.1.0 scripts are assembled from one file per concern: the files of
# sql-src/ring, archive, fleet, reports and checks, in the order of the
# number that starts their names (whatever their folder: a file uses only
# what lower numbers created), after sql-src/install/ for a fresh
# installation or sql-src/update/ for the update from 2.0.0.
SQL_CONCERN_PARTS = $(shell cd '$(srcdir)' && ls sql-src/*/[0-9]*.sql | \
	grep -v -e '^sql-src/install/' -e '^sql-src/update/' | \
	awk -F/ '{ print $$NF, $$0 }' | LC_ALL=C sort | cut -d' ' -f2)
SQL_PARTS_INSTALL = $(sort $(wildcard $(srcdir)/sql-src/install/*.sql)) $(addprefix $(srcdir)/,$(SQL_CONCERN_PARTS))
SQL_PARTS_UPDATE = $(sort $(wildcard $(srcdir)/sql-src/update/*.sql)) $(addprefix $(srcdir)/,$(SQL_CONCERN_PARTS))
# Two passes: the statements' shared parts put in place (src/fragments.awk),
# then the column lists.
SQL_TOOLS = $(srcdir)/src/columns.txt $(srcdir)/src/columns.awk $(srcdir)/src/fragments.awk
ASSEMBLE_SQL = awk -f $(srcdir)/src/fragments.awk $(1) > $@.frag && \
	$(COLUMNS_AWK) $(srcdir)/src/columns.txt $@.frag > $@.tmp && \
	rm -f $@.frag && mv $@.tmp $@
pgsentinel--2.1.0.sql: $(SQL_PARTS_INSTALL) $(SQL_TOOLS)
	$(call ASSEMBLE_SQL,$(SQL_PARTS_INSTALL))
pgsentinel--2.0.0--2.1.0.sql: $(SQL_PARTS_UPDATE) $(SQL_TOOLS)
	$(call ASSEMBLE_SQL,$(SQL_PARTS_UPDATE))

# A build outside the source tree (make -f SRC/Makefile VPATH=SRC, as
# pg_buildext does in build-VERSION/) puts the objects in its own src/ and
# src/*/: make creates no folder for a target.
ifdef VPATH
$(shell mkdir -p $(sort $(dir $(OBJS))))
endif

# Warnings are errors on every supported version.
override CFLAGS += -Werror

# A full install script of 2.0.0 left by an earlier build would shadow
# the update chain that installations of 2.0.0 follow: remove it.
install: remove-stale-install-scripts
.PHONY: remove-stale-install-scripts
remove-stale-install-scripts:
	rm -f '$(DESTDIR)$(datadir)/$(datamoduledir)/pgsentinel--2.0.0.sql'

# Against a running server, check first that it preloads pgsentinel with the
# test settings (not needed when only the TAP tests run: they start their
# own servers).
ifndef PGS_TEMP_INSTANCE
ifneq ($(strip $(REGRESS)$(ISOLATION)),)
installcheck: installcheck-preflight
endif
endif
.PHONY: installcheck-preflight
installcheck-preflight:
	sh '$(srcdir)/test/installcheck-preflight.sh' '$(bindir)/psql' '$(srcdir)/test/pgsentinel.conf'

# The PGXN distribution, pgsentinel-VERSION.zip: the committed tree (HEAD)
# under pgsentinel-VERSION/, without the paths marked export-ignore in
# .gitattributes.  VERSION is the control file's default_version, which
# scripts/check-version.sh keeps equal to META.json's.
EXTVERSION = $(shell sed -n "s/^default_version = '\(.*\)'/\1/p" $(srcdir)/pgsentinel.control)
.PHONY: dist
dist:
	git -C '$(srcdir)' archive --format=zip --prefix=pgsentinel-$(EXTVERSION)/ \
		-o '$(abspath pgsentinel-$(EXTVERSION).zip)' HEAD

# The pg_regress and isolation suites under AddressSanitizer and UBSan, on a
# PostgreSQL 15 built for it (scripts/sanitize-check.sh; its own pg_config,
# whatever PG_CONFIG says).  After the include, so that `make` still builds.
.PHONY: sanitize-check
sanitize-check:
	bash $(srcdir)/scripts/sanitize-check.sh
