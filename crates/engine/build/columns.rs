//! A query's column lists, filled in: the part of the build script (`crates/engine/build.rs`)
//! that reads `queries/columns/<row>.sql` and replaces each placeholder of a query by its list.
//! The engine's unit tests include this file too (as `store::columns`), so its rules are
//! tested as well as used.
//!
//! A placeholder is `{<row>_columns}`, the list of `columns/<row>.sql` as written, or
//! `{<table>.<row>_columns}`, the same with each column taken from `<table>`. SQL has no braces
//! outside its strings, quoted names and comments, so every brace there is a placeholder, and
//! one that names no list is a mistake the build stops at.

use std::collections::{BTreeMap, BTreeSet};

/// What a placeholder's name ends with: `{job_columns}` is `columns/job.sql`.
pub const SUFFIX: &str = "_columns";

/// A query's text with each placeholder replaced by its list, and the lists it used added to
/// `used`; or every placeholder and stray brace it has that is wrong, each with its line.
pub fn fill_in(
    text: &str,
    lists: &BTreeMap<String, ColumnList>,
    used: &mut BTreeSet<String>,
) -> Result<String, Vec<(usize, String)>> {
    let mut filled = String::with_capacity(text.len() * 2);
    let mut errors = Vec::new();
    let mut from = 0;
    for brace in braces(text) {
        let (start, end) = match brace {
            Brace::Placeholder(start, end) => (start, end),
            Brace::Stray(at) => {
                errors.push((
                    line_of(text, at),
                    "a brace outside a string or a comment that is no placeholder \
                     (`{job_columns}`, `{j.job_columns}`)"
                        .to_owned(),
                ));
                continue;
            }
        };
        let inner = &text[start + 1..end - 1];
        let (table, name) = match inner.split_once('.') {
            Some((table, name)) => (Some(table), name),
            None => (None, inner),
        };
        let list = name
            .strip_suffix(SUFFIX)
            .and_then(|row| lists.get_key_value(row))
            .filter(|_| table.is_none_or(is_identifier));
        let Some((row, list)) = list else {
            let known: Vec<String> = lists.keys().map(|k| format!("{{{k}{SUFFIX}}}")).collect();
            errors.push((
                line_of(text, start),
                format!(
                    "no column list is named {{{inner}}}; this backend's are {} (each may name \
                     a table, as in {{j.job_columns}})",
                    known.join(", ")
                ),
            ));
            continue;
        };
        used.insert(row.clone());
        filled.push_str(&text[from..start]);
        // The list's later lines start under its first, as if it had been written out there.
        let column = start - text[..start].rfind('\n').map_or(0, |n| n + 1);
        filled.push_str(
            &list
                .render(table)
                .replace('\n', &format!("\n{:column$}", "")),
        );
        from = end;
    }
    filled.push_str(&text[from..]);
    if errors.is_empty() {
        Ok(filled)
    } else {
        Err(errors)
    }
}

/// A row's columns as `columns/<row>.sql` lists them, without its comments: items separated by
/// commas, each a column's name or `expression AS name` where the expression reads that column
/// once (`onejob_time(created_at) AS created_at`).
pub struct ColumnList {
    text: String,
    /// Where each item's column is read in `text`, for a table's name to go before it.
    columns: Vec<usize>,
}

impl ColumnList {
    /// The list a `columns/<row>.sql` file holds, or why it is not one and on which line.
    pub fn parse(file: &str) -> Result<ColumnList, (usize, String)> {
        // The file's leading comments are its own, not the queries': the list starts at its
        // first line that is not one.
        let skipped = file
            .lines()
            .take_while(|l| l.trim().is_empty() || l.trim_start().starts_with("--"))
            .count();
        let start: usize = file.split_inclusive('\n').take(skipped).map(str::len).sum();
        let text = file[start..].trim_end().to_owned();
        let line = |at: usize| skipped + line_of(&text, at);
        if text.is_empty() {
            return Err((skipped + 1, "no columns".to_owned()));
        }
        if let Some(Brace::Placeholder(at, _) | Brace::Stray(at)) = braces(&text).first() {
            return Err((line(*at), "a brace in a column list".to_owned()));
        }
        let mut columns = Vec::new();
        for (from, to) in items(&text) {
            let item = &text[from..to];
            let at = from + (item.len() - item.trim_start().len());
            let item = item.trim();
            if item.contains("--") || item.contains("/*") {
                return Err((line(at), "a comment inside the list".to_owned()));
            }
            let words: Vec<&str> = item.split_whitespace().collect();
            let read = match words.as_slice() {
                [name] if is_identifier(name) => 0,
                [_, .., as_, name] if as_.eq_ignore_ascii_case("as") && is_identifier(name) => {
                    let expression = item[..item.len() - name.len()].trim_end();
                    let expression = &expression[..expression.len() - as_.len()];
                    let reads = bare_reads(expression, name);
                    let [read] = reads.as_slice() else {
                        return Err((
                            line(at),
                            format!(
                                "`{item}` reads its column `{name}` {} times; an item is a \
                                 column or `expression AS column` that reads it once",
                                reads.len()
                            ),
                        ));
                    };
                    *read
                }
                _ => {
                    return Err((
                        line(at),
                        format!("`{item}` is neither a column nor `expression AS column`"),
                    ))
                }
            };
            columns.push(at + read);
        }
        Ok(ColumnList { text, columns })
    }

    /// The list as written, or with `table.` before each column it reads.
    pub fn render(&self, table: Option<&str>) -> String {
        let Some(table) = table else {
            return self.text.clone();
        };
        let mut out = String::with_capacity(self.text.len() + self.columns.len() * 8);
        let mut from = 0;
        for &at in &self.columns {
            out.push_str(&self.text[from..at]);
            out.push_str(table);
            out.push('.');
            from = at;
        }
        out.push_str(&self.text[from..]);
        out
    }
}

/// A brace in SQL outside its strings, quoted names and comments.
enum Brace {
    /// `{…}` on one line, from its `{` to just after its `}`.
    Placeholder(usize, usize),
    /// A `{` that does not close on its line, or a `}` that opens nothing.
    Stray(usize),
}

/// The braces of `text` outside `'…'` strings, `"…"` names and `--`/`/* */` comments.
fn braces(text: &str) -> Vec<Brace> {
    let bytes = text.as_bytes();
    let mut found = Vec::new();
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'-' if bytes.get(i + 1) == Some(&b'-') => {
                i = text[i..].find('\n').map_or(bytes.len(), |n| i + n);
            }
            b'/' if bytes.get(i + 1) == Some(&b'*') => {
                i = text[i + 2..]
                    .find("*/")
                    .map_or(bytes.len(), |n| i + 2 + n + 2);
            }
            quote @ (b'\'' | b'"') => {
                // A doubled quote is the quote itself, inside.
                i += 1;
                while i < bytes.len() {
                    if bytes[i] == quote {
                        if bytes.get(i + 1) == Some(&quote) {
                            i += 2;
                            continue;
                        }
                        break;
                    }
                    i += 1;
                }
                i += 1;
            }
            b'{' => {
                let line_end = text[i..].find('\n').map_or(bytes.len(), |n| i + n);
                match text[i + 1..line_end].find(['{', '}']) {
                    Some(n) if bytes[i + 1 + n] == b'}' => {
                        found.push(Brace::Placeholder(i, i + n + 2));
                        i += n + 2;
                    }
                    _ => {
                        found.push(Brace::Stray(i));
                        i += 1;
                    }
                }
            }
            b'}' => {
                found.push(Brace::Stray(i));
                i += 1;
            }
            _ => i += 1,
        }
    }
    found
}

fn line_of(text: &str, at: usize) -> usize {
    text[..at].matches('\n').count() + 1
}

fn is_identifier(word: &str) -> bool {
    let mut chars = word.chars();
    chars
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
}

/// The items of a list: its text between commas outside parentheses and strings.
fn items(text: &str) -> Vec<(usize, usize)> {
    let (mut found, mut depth, mut from, mut quoted) = (Vec::new(), 0_i32, 0, None);
    for (i, &b) in text.as_bytes().iter().enumerate() {
        match (quoted, b) {
            (Some(q), _) if b == q => quoted = None,
            (Some(_), _) => {}
            (None, b'\'' | b'"') => quoted = Some(b),
            (None, b'(') => depth += 1,
            (None, b')') => depth -= 1,
            (None, b',') if depth == 0 => {
                found.push((from, i));
                from = i + 1;
            }
            _ => {}
        }
    }
    found.push((from, text.len()));
    found
}

/// Where `expression` reads `column` by itself: not a part of a longer name, not already taken
/// from a table (`t.column`), not a type (`::column`), and outside strings.
fn bare_reads(expression: &str, column: &str) -> Vec<usize> {
    let bytes = expression.as_bytes();
    let word = |b: u8| b.is_ascii_alphanumeric() || b == b'_';
    let mut found = Vec::new();
    let mut quoted = false;
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'\'' {
            quoted = !quoted;
        } else if !quoted
            && expression[i..].starts_with(column)
            && (i == 0 || !(word(bytes[i - 1]) || matches!(bytes[i - 1], b'.' | b':')))
            && bytes.get(i + column.len()).is_none_or(|&b| !word(b))
        {
            found.push(i);
            i += column.len();
            continue;
        }
        i += 1;
    }
    found
}

#[cfg(test)]
mod tests {
    use super::*;

    const SQLITE_JOB: &str = "-- A job's columns.\n-- (two lines of comment)\n\
                              id, owner_id,\nstatus\n";
    const POSTGRES_JOB: &str = "-- A job's columns.\nid::text AS id, owner_id,\n\
                                onejob_time(created_at) AS created_at\n";

    fn lists(file: &str) -> BTreeMap<String, ColumnList> {
        let list = ColumnList::parse(file).expect("a column list");
        BTreeMap::from([("job".to_owned(), list)])
    }

    fn filled(query: &str, file: &str) -> Result<String, Vec<(usize, String)>> {
        fill_in(query, &lists(file), &mut BTreeSet::new())
    }

    #[test]
    fn a_placeholder_is_the_list_as_written_and_its_comments_are_left_out() {
        let query = "-- {job_columns} in a comment stays.\nSELECT {job_columns}\nFROM jobs";
        assert_eq!(
            filled(query, SQLITE_JOB).unwrap(),
            "-- {job_columns} in a comment stays.\nSELECT id, owner_id,\n       status\nFROM jobs"
        );
    }

    #[test]
    fn a_table_before_the_name_goes_before_each_column_the_list_reads() {
        assert_eq!(
            filled("RETURNING {j.job_columns}", SQLITE_JOB).unwrap(),
            "RETURNING j.id, j.owner_id,\n          j.status"
        );
        assert_eq!(
            filled("SELECT {won.job_columns} FROM won", POSTGRES_JOB).unwrap(),
            "SELECT won.id::text AS id, won.owner_id,\n       \
             onejob_time(won.created_at) AS created_at FROM won"
        );
    }

    #[test]
    fn braces_in_strings_quoted_names_and_comments_are_sql() {
        let query = "SELECT jsonb_set(d, '{from}', s), \"{x}\" /* {y} */ -- {z}\nFROM t";
        assert_eq!(filled(query, SQLITE_JOB).unwrap(), query);
    }

    #[test]
    fn a_misspelt_placeholder_is_a_mistake_on_its_line() {
        let errors = filled("SELECT 1;\nSELECT {job_colums} FROM jobs", SQLITE_JOB).unwrap_err();
        assert_eq!(errors.len(), 1);
        assert_eq!(errors[0].0, 2);
        assert!(errors[0].1.contains("{job_colums}"), "{}", errors[0].1);
        assert!(errors[0].1.contains("{job_columns}"), "{}", errors[0].1);
        for wrong in [
            "{attempt_columns}",
            "{job}",
            "{ job_columns }",
            "{1.job_columns}",
            "{j.k.job_columns}",
        ] {
            assert!(filled(wrong, SQLITE_JOB).is_err(), "{wrong}");
        }
    }

    #[test]
    fn a_brace_that_is_no_placeholder_is_a_mistake() {
        for wrong in [
            "SELECT {job_columns\nFROM jobs",
            "SELECT job_columns}",
            "SELECT {{job_columns}}",
        ] {
            assert!(filled(wrong, SQLITE_JOB).is_err(), "{wrong}");
        }
    }

    #[test]
    fn the_lists_used_are_counted() {
        let mut used = BTreeSet::new();
        fill_in("SELECT 1", &lists(SQLITE_JOB), &mut used).unwrap();
        assert!(used.is_empty());
        fill_in("SELECT {a.job_columns}", &lists(SQLITE_JOB), &mut used).unwrap();
        assert_eq!(used, BTreeSet::from(["job".to_owned()]));
    }

    #[test]
    fn a_list_is_columns_or_expressions_each_reading_its_column_once() {
        for (file, line) in [
            ("-- nothing\n", 2),
            ("id, count(*)", 1),
            ("id,\nowner_id || owner_id AS owner_id", 2),
            ("id,\n-- a comment\nstatus", 2),
            ("id, coalesce(x, y) AS status", 1),
            ("{job_columns}", 1),
        ] {
            let Err((at, _)) = ColumnList::parse(file) else {
                panic!("{file:?} is no column list");
            };
            assert_eq!(at, line, "{file:?}");
        }
        // `::text` is a type and `t.id` another table's column, neither the column read.
        let list = ColumnList::parse("t.id::text || id AS id").unwrap();
        assert_eq!(list.render(Some("x")), "t.id::text || x.id AS id");
    }
}
