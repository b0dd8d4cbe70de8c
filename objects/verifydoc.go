package objects

import "errors"

// VerifyDoc checks that a stored document which says it is an object
// describes itself truly: when its "type" is an object kind, it must
// decode as one (FromDoc: the id rules, the identity hash recomputed) and
// its content and metadata view hashes must be those its fields give
// (VerifyHashes). Any other document passes: it makes no claim these
// hashes could check. Importers run it on every document they would write
// (a store never checks an object's hashes again, and readers trust them);
// the error is FromDoc's or VerifyHashes', and ErrorField names its field.
func VerifyDoc(doc map[string]any) error {
	kind, _ := doc["type"].(string)
	if !Kind(kind).Valid() {
		return nil
	}
	o, err := FromDoc(doc)
	if err != nil {
		return err
	}
	return o.VerifyHashes()
}

// ErrorField names the field an error of this package is about: the hash
// that differs (a *HashMismatchError), else the field at fault (a
// *FieldError), else "document".
func ErrorField(err error) string {
	var hm *HashMismatchError
	if errors.As(err, &hm) {
		return hm.Hash
	}
	var fe *FieldError
	if errors.As(err, &fe) && fe.Field != "" {
		return fe.Field
	}
	return "document"
}
