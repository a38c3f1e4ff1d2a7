//! Table names `dprp export` accepts: `name` or `schema.name`, each part a lower-case SQL
//! identifier that is not a PostgreSQL keyword, so that the name means the same unquoted in every
//! client (psql, the docs' SQL, `dprp.postgres`).

use crate::error::{Error, Result};

/// PostgreSQL's keywords that cannot stand unquoted as a table name everywhere: the reserved ones
/// (category R), those reserved but allowed as function or type names (T), and those that cannot
/// be function or type names (C) — `SELECT word FROM pg_get_keywords() WHERE catcode <> 'U'` on
/// PostgreSQL 16.14, plus the C keywords PostgreSQL 17 added (`json_exists`, `json_query`,
/// `json_scalar`, `json_serialize`, `json_table`, `json_value`, `merge_action`). Sorted, for
/// binary search. Unreserved keywords (`data`, `name`, `items`, …) are fine as table names.
const KEYWORDS: &[&str] = &[
    "all",
    "analyse",
    "analyze",
    "and",
    "any",
    "array",
    "as",
    "asc",
    "asymmetric",
    "authorization",
    "between",
    "bigint",
    "binary",
    "bit",
    "boolean",
    "both",
    "case",
    "cast",
    "char",
    "character",
    "check",
    "coalesce",
    "collate",
    "collation",
    "column",
    "concurrently",
    "constraint",
    "create",
    "cross",
    "current_catalog",
    "current_date",
    "current_role",
    "current_schema",
    "current_time",
    "current_timestamp",
    "current_user",
    "dec",
    "decimal",
    "default",
    "deferrable",
    "desc",
    "distinct",
    "do",
    "else",
    "end",
    "except",
    "exists",
    "extract",
    "false",
    "fetch",
    "float",
    "for",
    "foreign",
    "freeze",
    "from",
    "full",
    "grant",
    "greatest",
    "group",
    "grouping",
    "having",
    "ilike",
    "in",
    "initially",
    "inner",
    "inout",
    "int",
    "integer",
    "intersect",
    "interval",
    "into",
    "is",
    "isnull",
    "join",
    "json_array",
    "json_arrayagg",
    "json_exists",
    "json_object",
    "json_objectagg",
    "json_query",
    "json_scalar",
    "json_serialize",
    "json_table",
    "json_value",
    "lateral",
    "leading",
    "least",
    "left",
    "like",
    "limit",
    "localtime",
    "localtimestamp",
    "merge_action",
    "national",
    "natural",
    "nchar",
    "none",
    "normalize",
    "not",
    "notnull",
    "null",
    "nullif",
    "numeric",
    "offset",
    "on",
    "only",
    "or",
    "order",
    "out",
    "outer",
    "overlaps",
    "overlay",
    "placing",
    "position",
    "precision",
    "primary",
    "real",
    "references",
    "returning",
    "right",
    "row",
    "select",
    "session_user",
    "setof",
    "similar",
    "smallint",
    "some",
    "substring",
    "symmetric",
    "system_user",
    "table",
    "tablesample",
    "then",
    "time",
    "timestamp",
    "to",
    "trailing",
    "treat",
    "trim",
    "true",
    "union",
    "unique",
    "user",
    "using",
    "values",
    "varchar",
    "variadic",
    "verbose",
    "when",
    "where",
    "window",
    "with",
    "xmlattributes",
    "xmlconcat",
    "xmlelement",
    "xmlexists",
    "xmlforest",
    "xmlnamespaces",
    "xmlparse",
    "xmlpi",
    "xmlroot",
    "xmlserialize",
    "xmltable",
];

/// Whether `word` (lower case) is one of PostgreSQL's keywords a table name cannot be.
pub fn is_keyword(word: &str) -> bool {
    KEYWORDS.binary_search(&word).is_ok()
}

/// The table name checked: `name` or `schema.name`, each part a lower-case SQL identifier (so that
/// it needs no quoting and means the same in every client) and not a PostgreSQL keyword.
/// `option` names the option.
pub fn check_table_name(table: &str, option: &str) -> Result<()> {
    let parts: Vec<&str> = table.split('.').collect();
    let ok = |s: &str| {
        !s.is_empty()
            && s.len() <= 63
            && s.bytes()
                .next()
                .is_some_and(|b| b.is_ascii_lowercase() || b == b'_')
            && s.bytes()
                .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_')
    };
    if parts.len() > 2 || !parts.iter().all(|p| ok(p)) {
        return Err(Error::param(
            option,
            format!(
                "'{table}' is not a table name dprp accepts: use `name` or `schema.name` made of \
                 lower-case letters, digits and _ (starting with a letter or _), at most 63 \
                 characters each"
            ),
        ));
    }
    if let Some(word) = parts.iter().find(|p| is_keyword(p)) {
        return Err(Error::param(
            option,
            format!(
                "'{table}': {word} is a PostgreSQL keyword, which SQL cannot take unquoted as a \
                 table name; choose another name (e.g. {word}_sketches)"
            ),
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keywords_are_sorted_and_lower_case() {
        assert!(KEYWORDS.windows(2).all(|w| w[0] < w[1]));
        assert!(KEYWORDS
            .iter()
            .all(|w| w.bytes().all(|b| b.is_ascii_lowercase() || b == b'_')));
        assert_eq!(KEYWORDS.len(), 163);
    }

    #[test]
    fn table_names_are_plain_lower_case_identifiers() {
        for ok in [
            "t",
            "docs_2",
            "public.docs",
            "_x.y1",
            "data",
            "items",
            "name",
            "user_",
        ] {
            check_table_name(ok, "--table").unwrap();
        }
        for bad in [
            "",
            "Docs",
            "a.b.c",
            "1t",
            "t;drop table x",
            "a b",
            "t\"",
            ".t",
        ] {
            let e = check_table_name(bad, "--table").unwrap_err().to_string();
            assert!(
                e.contains("--table") && e.contains("lower-case"),
                "{bad}: {e}"
            );
        }
    }

    #[test]
    fn keywords_are_refused_as_either_part() {
        for (bad, word) in [
            ("select", "select"),
            ("user", "user"),
            ("public.table", "table"),
            ("order.t", "order"),
            ("values", "values"),
            ("json_table", "json_table"),
        ] {
            let e = check_table_name(bad, "--table").unwrap_err().to_string();
            assert!(
                e.contains("--table") && e.contains(&format!("{word} is a PostgreSQL keyword")),
                "{bad}: {e}"
            );
        }
    }
}
