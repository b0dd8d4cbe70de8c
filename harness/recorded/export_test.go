package recorded

// OnUpdate, when set, is called with what each Update did.
var OnUpdate = &onUpdate
