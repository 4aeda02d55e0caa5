/*
 * extended_query_client.c
 *		A libpq client for t/015_extended_query.pl: statements sent with the
 *		extended query protocol (PQexecParams: Parse, Bind, Execute), as
 *		JDBC, Npgsql or psycopg 3 send them.  psql only speaks the simple
 *		protocol (before PostgreSQL 16), in which every statement is
 *		top-level and resets the hooks' nesting depth.
 *
 * Usage: extended_query_client CONNINFO BIG_TEXT_BYTES
 *
 * Prints "pid N", then one line per statement ("label: STATUS"), then
 * "connection ok" if the session survived.  Exit status 0 unless the
 * connection could not be made.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "libpq-fe.h"

static void
run(PGconn *conn, const char *label, const char *sql)
{
	PGresult   *res = PQexecParams(conn, sql, 0, NULL, NULL, NULL, NULL, 0);

	printf("%s: %s\n", label, PQresStatus(PQresultStatus(res)));
	PQclear(res);
}

/*
 * Was this session's statement sql seen in a sample?  The question's own
 * text starts otherwise, so a row of it is never taken for one of sql.
 */
static int
sampled(PGconn *conn, const char *sql)
{
	const char *params[1] = {sql};
	PGresult   *res = PQexecParams(conn,
								   "SELECT EXISTS (SELECT FROM pg_active_session_history"
								   " WHERE pid = pg_backend_pid() AND query = $1)"
								   " /* ext-sleep-check */",
								   1, NULL, params, NULL, NULL, 0);
	int			seen = PQresultStatus(res) == PGRES_TUPLES_OK &&
		PQntuples(res) == 1 && strcmp(PQgetvalue(res, 0, 0), "t") == 0;

	PQclear(res);
	return seen;
}

/* A failing statement padded with a comment to len bytes of text. */
static char *
failing_statement(size_t len)
{
	const char *head = "SELECT x / 0 FROM generate_series(1, 1) x /* ";
	size_t		hlen = strlen(head);
	char	   *sql = malloc(hlen + len + 4);

	if (sql == NULL)
		exit(2);
	memcpy(sql, head, hlen);
	memset(sql + hlen, 'x', len);
	strcpy(sql + hlen + len, " */");
	return sql;
}

int
main(int argc, char **argv)
{
	PGconn	   *conn;
	size_t		big;
	int			round;
	int			i;

	if (argc != 3)
	{
		fprintf(stderr, "usage: %s CONNINFO BIG_TEXT_BYTES\n", argv[0]);
		return 2;
	}
	big = (size_t) atol(argv[2]);
	conn = PQconnectdb(argv[1]);
	if (PQstatus(conn) != CONNECTION_OK)
	{
		fprintf(stderr, "%s", PQerrorMessage(conn));
		return 1;
	}
	printf("pid %d\n", PQbackendPID(conn));

	/*
	 * Each failure leaves a statement open in the hooks' count (ExecutorEnd
	 * does not run) and its text, freed with the aborted transaction, in
	 * their stack; the statements after it open and close above them.
	 */
	for (round = 0; round < 3; round++)
	{
		char	   *sql = failing_statement(big);

		run(conn, "fail small", "SELECT x / 0 FROM generate_series(1, 1) x");
		run(conn, "fail big", sql);
		run(conn, "plain", "SELECT 1");
		run(conn, "nested", "SELECT pgs_ext_nested()");
		free(sql);
	}
	/*
	 * A statement sampled after all of that: short sleeps until a sample saw
	 * one (at most 60 s), however slow the sampler.
	 */
	for (i = 0; i < 600; i++)
	{
		const char *sleep = "SELECT pg_sleep(0.1) /* ext-sleep */";
		PGresult   *res = PQexecParams(conn, sleep, 0, NULL, NULL, NULL, NULL, 0);

		if (PQresultStatus(res) != PGRES_TUPLES_OK)
		{
			printf("sleep: %s\n", PQresStatus(PQresultStatus(res)));
			PQclear(res);
			break;
		}
		PQclear(res);
		if (sampled(conn, sleep))
		{
			printf("sleep: sampled\n");
			break;
		}
	}
	/* and one in an explicit transaction that fails, then one more */
	run(conn, "begin", "BEGIN");
	run(conn, "fail in block", "SELECT pgs_ext_nested() / 0");
	run(conn, "rollback", "ROLLBACK");
	run(conn, "nested again", "SELECT pgs_ext_nested()");

	/*
	 * A statement, then one that waits for a lock while it is parsed (the
	 * test holds it): the wait is the second statement's, not the first's.
	 */
	run(conn, "first", "SELECT 42 /* ext-first */");
	run(conn, "second", "SELECT count(*) FROM pgs_ext_locked /* ext-second */");

	printf("connection %s\n", PQstatus(conn) == CONNECTION_OK ? "ok" : "lost");
	PQfinish(conn);
	return 0;
}
