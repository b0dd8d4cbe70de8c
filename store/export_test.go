package store

// ValidateValue checks a JSON value (as encoding/json decodes it with
// UseNumber, or Go scalars) against the input rules a document's fields
// are checked by, and returns a *ValueError naming the path of the first
// field at fault.
func ValidateValue(v any) error {
	if err := validateValue(v); err != nil {
		return err
	}
	return nil
}
