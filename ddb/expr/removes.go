package expr

// OnlyRemoves reports whether every action of the update takes something
// away: REMOVE, DELETE from a set, or a legacy AttributeUpdates DELETE.
// Such an update of a missing item leaves it missing (DynamoDB creates no
// item for it), where any other update creates the item.
func (u *Update) OnlyRemoves() bool {
	if u == nil || len(u.actions) == 0 {
		return false
	}
	for _, a := range u.actions {
		if a.kind != aRemove && a.kind != aDelete {
			return false
		}
	}
	return true
}
