# columns.awk -- generate column code and lists from src/columns.txt
#
#	awk -f src/columns.awk -v out=header src/columns.txt > src/columns_gen.h
#	awk -f src/columns.awk src/columns.txt a.sql b.sql ... > script.sql
#
# The first file is the column list (its format is at its top); with
# out=header the C header is written, else the other files are copied
# with each "--@columns" line replaced by the list it asks for.

BEGIN {
	ctype["timestamptz"] = "TIMESTAMPTZOID"; ctype["oid"] = "OIDOID";
	ctype["text"] = "TEXTOID"; ctype["integer"] = "INT4OID";
	ctype["bigint"] = "INT8OID"; ctype["xid"] = "XIDOID";
	ctype["integer[]"] = "INT4ARRAYOID"; ctype["float8"] = "FLOAT8OID";
	ctype["boolean"] = "BOOLOID"; ctype["bytea"] = "BYTEAOID";
	ctype["bigint[]"] = "INT8ARRAYOID"; ctype["oid[]"] = "OIDARRAYOID";
	ctype["text[]"] = "TEXTARRAYOID"; ctype["xid[]"] = "XIDARRAYOID";
	ctype["float8[]"] = "FLOAT8ARRAYOID"; ctype["boolean[]"] = "BOOLARRAYOID";
	ctype["\"char\""] = "CHAROID"; ctype["\"char\"[]"] = "CHARARRAYOID";
	ctype["timestamptz[]"] = "TIMESTAMPTZARRAYOID";
	ckind["packed"] = "PGS_BATCH_PACKED"; ckind["texts"] = "PGS_BATCH_TEXTS";
	ckind["float8"] = "PGS_BATCH_FLOAT8";
	nsect = 0;
}

function fail(msg) {
	printf("%s:%d: %s\n", FILENAME, FNR, msg) > "/dev/stderr";
	failed = 1;
	exit 1;
}

# the column list
FNR == NR {
	if ($0 ~ /^[ \t]*(#|$)/)
		next;
	if ($0 ~ /^\[[a-z_]+\]$/) {
		sect = substr($0, 2, length($0) - 2);
		if (sect in ncol)
			fail("section " sect " twice");
		sects[++nsect] = sect;
		ncol[sect] = 0;
		next;
	}
	if (sect == "")
		fail("a column before any section");
	# "@SECTION FIRST..LAST": that section's columns from FIRST to LAST
	# (to its end when LAST is left out)
	if ($1 ~ /^@/) {
		from = substr($1, 2);
		if (!(from in ncol) || from == sect)
			fail("no earlier section \"" from "\"");
		if (NF != 2 || split($2, ends, /\.\./) != 2)
			fail("@" from " takes FIRST..LAST");
		copying = 0;
		for (i = 1; i <= ncol[from]; i++) {
			if (name[from, i] == ends[1])
				copying = 1;
			if (copying) {
				if ((sect, name[from, i]) in seen)
					fail("column " name[from, i] " twice in " sect);
				seen[sect, name[from, i]] = 1;
				n = ++ncol[sect];
				name[sect, n] = name[from, i];
				type[sect, n] = type[from, i];
				flags[sect, n] = " ";
			}
			if (copying && name[from, i] == ends[2])
				break;
		}
		if (!copying || (ends[2] != "" && i > ncol[from]))
			fail("no columns " $2 " in section " from);
		next;
	}
	if ($1 !~ /^[a-z_][a-z0-9_]*$/)
		fail("bad column name \"" $1 "\"");
	if (!($2 in ctype))
		fail("unknown type \"" $2 "\" (add it to src/columns.awk)");
	if ((sect, $1) in seen)
		fail("column " $1 " twice in " sect);
	seen[sect, $1] = 1;
	n = ++ncol[sect];
	name[sect, n] = $1;
	type[sect, n] = $2;
	flags[sect, n] = " ";
	for (i = 3; i <= NF; i++) {
		if ($i ~ /^kind=/) {
			k = substr($i, 6);
			if (!(k in ckind))
				fail("unknown kind \"" k "\"");
			kind[sect, n] = ckind[k];
			nkind[sect]++;
		} else if ($i ~ /^elem=/) {
			k = substr($i, 6);
			if (!(k in ctype))
				fail("unknown element type \"" k "\"");
			elem[sect, n] = ctype[k];
			elemsql[sect, n] = k;
			nelem[sect]++;
		} else
			flags[sect, n] = flags[sect, n] $i " ";
	}
	next;
}

# a script: copy it, lists in place of the directives
out != "header" && $1 == "--@columns" {
	s = $2; form = $3; filter = ""; more = 0; prefix = "";
	for (i = 4; i <= NF; i++)
		if ($i == "more")
			more = 1;
		else if ($i ~ /^prefix=/)
			prefix = substr($i, 8);
		else
			filter = $i;
	if (!(s in ncol))
		fail("no section \"" s "\" in the column list");
	if (form != "decl" && form != "out" && form != "names" && form != "elemout")
		fail("unknown form \"" form "\"");
	if (prefix != "" && form != "names")
		fail("prefix= goes with the form names");
	match($0, /^[ \t]*/);
	indent = substr($0, 1, RLENGTH);
	m = 0;
	for (i = 1; i <= ncol[s]; i++)
		if (filter == "" || index(flags[s, i], " " filter " "))
			pick[++m] = i;
	if (m == 0)
		fail("no column of " s " has the flag \"" filter "\"");
	for (j = 1; j <= m; j++) {
		dflt = "";
		if (form == "decl" && index(flags[s, pick[j]], " optional "))
			dflt = " DEFAULT NULL";
		if (form == "names")
			printf("%s%s%s%s\n", indent, prefix, name[s, pick[j]],
				   (j < m || more) ? "," : "");
		else if (form == "elemout") {
			if (!((s, pick[j]) in elemsql))
				fail("column " name[s, pick[j]] " of " s " has no elem=");
			printf("%sOUT %s %s%s\n", indent, name[s, pick[j]],
				   elemsql[s, pick[j]], (j < m || more) ? "," : "");
		}
		else
			printf("%s%s%s %s%s%s\n", indent, form == "out" ? "OUT " : "",
				   name[s, pick[j]], type[s, pick[j]], dflt,
				   (j < m || more) ? "," : "");
	}
	next;
}
out != "header" { print; }

END {
	if (failed || out != "header")
		exit failed;
	print "/*";
	print " * columns_gen.h";
	print " *\t\tGenerated from src/columns.txt by src/columns.awk: edit those.";
	print " */";
	print "#ifndef PGS_COLUMNS_GEN_H";
	print "#define PGS_COLUMNS_GEN_H";
	for (k = 1; k <= nsect; k++) {
		s = sects[k];
		S = toupper(s);
		printf("\n/* [%s] */\nenum\n{\n", s);
		for (i = 1; i <= ncol[s]; i++)
			printf("\tPGS_%s_%s%s%s\n", S, toupper(name[s, i]),
				   i == 1 ? " = 0" : "", i < ncol[s] ? "," : "");
		printf("};\n#define PGS_%s_COLS %d\n", S, ncol[s]);
		printf("#define PGS_%s_COLUMN_NAMES \\\n", S);
		for (i = 1; i <= ncol[s]; i++)
			printf("\t\"%s\"%s\n", name[s, i], i < ncol[s] ? ", \\" : "");
		printf("#define PGS_%s_COLUMN_TYPES \\\n", S);
		for (i = 1; i <= ncol[s]; i++)
			printf("\t%s%s\n", ctype[type[s, i]], i < ncol[s] ? ", \\" : "");
		if (nkind[s] > 0) {
			if (nkind[s] != ncol[s])
				fail("section " s ": a kind for some columns only");
			printf("#define PGS_%s_COLUMN_KINDS \\\n", S);
			for (i = 1; i <= ncol[s]; i++)
				printf("\t%s%s\n", kind[s, i], i < ncol[s] ? ", \\" : "");
		}
		if (nelem[s] > 0) {
			if (nelem[s] != ncol[s])
				fail("section " s ": an element type for some columns only");
			printf("#define PGS_%s_ELEMENT_TYPES \\\n", S);
			for (i = 1; i <= ncol[s]; i++)
				printf("\t%s%s\n", elem[s, i], i < ncol[s] ? ", \\" : "");
		}
	}
	print "\n#endif\t\t\t\t\t\t\t/* PGS_COLUMNS_GEN_H */";
}
