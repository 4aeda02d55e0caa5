# fragments.awk -- put the shared parts of statements in place, at build time
#
#	awk -f src/fragments.awk a.sql b.sql ... > script.sql
#
# The archive and the fleet store rows and roll them up with the same
# statements, which differ in their tables and in a few clauses (a fleet
# server's id, ON CONFLICT).  Such a part is written once, as a fragment,
# with the lines of each variant side by side, and put into the statements
# that use it when the install and update scripts are made: the scripts
# hold plain statement texts, and nothing is substituted when they run.
#
#	--@fragment NAME	starts a fragment (copied nowhere by itself)
#	--@local		the lines after it are the archive's only
#	--@fleet		the lines after it are the fleet's only
#	--@both			the lines after it are both variants' (the default)
#	--@end			ends the fragment
#	--@include NAME [local|fleet]
#				replaced by the fragment's lines of both variants
#				and, when named, of that variant (a fragment with
#				variant lines must be included with one)
#
# A fragment is defined before it is included, in the order the scripts
# are assembled, and every fragment is included somewhere.

function fail(msg) {
	printf("%s:%d: %s\n", FILENAME, FNR, msg) > "/dev/stderr";
	failed = 1;
	exit 1;
}

$1 == "--@fragment" {
	if (frag != "")
		fail("fragment " $2 " inside fragment " frag);
	if (NF != 2 || $2 !~ /^[a-z_]+$/)
		fail("--@fragment takes one name");
	if ($2 in nlines)
		fail("fragment " $2 " defined twice");
	frag = $2;
	nlines[frag] = 0;
	variants[frag] = 0;
	variant = "both";
	next;
}

$1 ~ /^--@(local|fleet|both)$/ {
	if (NF != 1)
		fail($1 " takes nothing after it on its line");
	if (frag == "")
		fail($1 " outside a fragment");
	variant = substr($1, 4);
	if (variant != "both")
		variants[frag] = 1;
	next;
}

$1 == "--@end" {
	if (frag == "")
		fail("--@end outside a fragment");
	if (variant != "both")
		fail("fragment " frag " ends in its " variant " lines: add --@both");
	frag = "";
	next;
}

$1 ~ /^--@/ && $1 !~ /^--@(columns|include|fragment)$/ {
	fail("unknown directive " $1);
}

frag != "" {
	if ($1 == "--@include")
		fail("--@include inside fragment " frag);
	n = ++nlines[frag];
	line[frag, n] = $0;
	of[frag, n] = variant;
	next;
}

$1 == "--@include" {
	if (!($2 in nlines))
		fail("fragment \"" $2 "\" not defined before this line");
	if (NF == 2 && variants[$2])
		fail("fragment " $2 " has variants: name one (local or fleet)");
	if (NF > 3 || (NF == 3 && $3 != "local" && $3 != "fleet"))
		fail("--@include takes a name and local or fleet");
	used[$2] = 1;
	for (i = 1; i <= nlines[$2]; i++)
		if (of[$2, i] == "both" || of[$2, i] == $3)
			print line[$2, i];
	next;
}

{ print; }

END {
	if (failed)
		exit 1;
	if (frag != "") {
		printf("fragment %s has no --@end\n", frag) > "/dev/stderr";
		exit 1;
	}
	for (f in nlines)
		if (!(f in used)) {
			printf("fragment %s is included nowhere\n", f) > "/dev/stderr";
			exit 1;
		}
}
