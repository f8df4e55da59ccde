//! Which of the workers' errors the load reports: workers fail at about the
//! same moment on bad rows of different chunks, and the one that happened
//! to fail first may hold a later line. COPY stops at the first bad line,
//! and so does the report: the error earliest in the inputs wins.

use crate::error::{Error, Position};
use crate::source::input::InputSpec;

/// The error to report: the one already kept, unless `new` lies earlier
/// in the inputs. Errors that name no line (a lost connection...) keep
/// their order of arrival.
pub(super) fn keep_earliest(kept: &mut Option<Error>, new: Error, inputs: &[InputSpec]) {
    let Some(old) = kept.as_ref() else {
        *kept = Some(new);
        return;
    };
    let place = |e: &Error| place_in_inputs(e, inputs);
    if let (Some(new_at), Some(old_at)) = (place(&new), place(old)) {
        if new_at < old_at {
            *kept = Some(new);
        }
    }
}

/// The input (by its place in the load) and the line an error names.
fn place_in_inputs(error: &Error, inputs: &[InputSpec]) -> Option<(usize, u64)> {
    let position: &Position = match error {
        Error::Data { position, .. } => position,
        Error::Copy {
            position: Some(position),
            ..
        } => position,
        _ => return None,
    };
    let input = inputs.iter().position(|i| i.name() == position.file)?;
    Some((input, position.line))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn bad_line(file: &str, line: u64) -> Error {
        Error::Data {
            position: Position {
                file: file.into(),
                line,
                column: None,
            },
            message: "bad".into(),
        }
    }

    #[test]
    fn the_error_earliest_in_the_inputs_is_kept() {
        let inputs = [
            InputSpec::File("a.csv".into()),
            InputSpec::File("b.csv".into()),
        ];
        let mut kept = None;
        keep_earliest(&mut kept, bad_line("b.csv", 3), &inputs);
        keep_earliest(&mut kept, bad_line("a.csv", 900), &inputs);
        keep_earliest(&mut kept, bad_line("a.csv", 950), &inputs);
        keep_earliest(&mut kept, Error::Stopped, &inputs);
        assert_eq!(
            kept.unwrap().to_string(),
            bad_line("a.csv", 900).to_string()
        );
        // One without a line is not replaced by one with.
        let mut kept = Some(Error::Stopped);
        keep_earliest(&mut kept, bad_line("a.csv", 1), &inputs);
        assert!(matches!(kept, Some(Error::Stopped)));
    }
}
