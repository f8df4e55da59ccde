//! Which rows COPY would have refused: in file order, a row is refused
//! when one of its keys is already held by a row kept before it. A row
//! refused holds nothing, so a later row with the same value of another
//! key may well be kept.

use std::collections::HashMap;

/// A row that holds a duplicated value of at least one key, in file order.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Occurrence {
    /// For each key, the group of rows that share its value; `None` when
    /// the row's value of that key is held by no other row.
    pub groups: Vec<Option<i64>>,
}

/// A row refused: which key it repeats, and the row kept that holds it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Refused {
    /// Its index among the occurrences.
    pub row: usize,
    pub key: usize,
    pub kept: usize,
}

/// The rows COPY would refuse, in file order, of `occurrences` given in
/// file order.
pub(crate) fn refused(occurrences: &[Occurrence]) -> Vec<Refused> {
    let keys = occurrences.first().map_or(0, |o| o.groups.len());
    let mut held: Vec<HashMap<i64, usize>> = vec![HashMap::new(); keys];
    let mut refused = Vec::new();
    for (row, occurrence) in occurrences.iter().enumerate() {
        let taken = occurrence
            .groups
            .iter()
            .enumerate()
            .find_map(|(key, group)| Some((key, *held[key].get(&(*group)?)?)));
        match taken {
            Some((key, kept)) => refused.push(Refused { row, key, kept }),
            None => {
                for (key, group) in occurrence.groups.iter().enumerate() {
                    if let Some(group) = group {
                        held[key].insert(*group, row);
                    }
                }
            }
        }
    }
    refused
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rows(groups: &[&[Option<i64>]]) -> Vec<Occurrence> {
        groups
            .iter()
            .map(|g| Occurrence { groups: g.to_vec() })
            .collect()
    }

    #[test]
    fn the_first_row_of_a_key_is_kept_and_the_later_ones_refused() {
        let found = refused(&rows(&[&[Some(1)], &[Some(2)], &[Some(1)], &[Some(1)]]));
        let rows: Vec<(usize, usize)> = found.iter().map(|r| (r.row, r.kept)).collect();
        assert_eq!(rows, vec![(2, 0), (3, 0)]);
    }

    #[test]
    fn a_refused_row_holds_no_key_so_a_later_row_may_take_it() {
        // id, email: (1, x) kept; (2, x) refused for x; (2, y) kept, as
        // COPY keeps it: the row that had id 2 before it was refused.
        let found = refused(&rows(&[
            &[None, Some(7)],
            &[Some(3), Some(7)],
            &[Some(3), None],
        ]));
        assert_eq!(
            found,
            vec![Refused {
                row: 1,
                key: 1,
                kept: 0
            }]
        );
    }

    #[test]
    fn a_row_is_refused_for_its_first_key_held() {
        let found = refused(&rows(&[
            &[Some(1), None],
            &[None, Some(2)],
            &[Some(1), Some(2)],
        ]));
        assert_eq!(
            found,
            vec![Refused {
                row: 2,
                key: 0,
                kept: 0
            }]
        );
    }
}
