package recorded

// OnUpdate, when set, is called with what each Update did.
var OnUpdate = &onUpdate

// OnPrefix, when set, is called while RequestOf holds the request it
// rebuilt from the commits read a page at a time.
var OnPrefix = &onPrefix
