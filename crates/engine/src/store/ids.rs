//! Ids as the ledger writes them: UUIDs in their canonical text (lowercase, hyphenated). A
//! statement that casts an id (`onejob_uuid`, `::uuid`) is given only such text; any other
//! names no job or attempt.

/// The lowest and highest ids in their canonical text (lowercase, hyphenated).
pub(super) const LOWEST_ID: &str = "00000000-0000-0000-0000-000000000000";
pub(super) const HIGHEST_ID: &str = "ffffffff-ffff-ffff-ffff-ffffffffffff";

/// Whether each character of `text` is what an id's canonical text holds at that position:
/// `text` is such an id, or the start of one.
pub(super) fn fits_id_text(text: &str) -> bool {
    text.len() <= LOWEST_ID.len()
        && text.bytes().zip(LOWEST_ID.bytes()).all(|(c, slot)| {
            if slot == b'-' {
                c == b'-'
            } else {
                c.is_ascii_digit() || (b'a'..=b'f').contains(&c)
            }
        })
}

/// Whether `id` is a UUID in its canonical form (lowercase, hyphenated), as `onejob_uuid`
/// reads one: any other text names no job or attempt.
pub(super) fn is_canonical_id(id: &str) -> bool {
    id.len() == LOWEST_ID.len() && fits_id_text(id)
}
