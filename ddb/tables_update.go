package ddb

import (
	"fmt"
	"time"
)

// UpdateTable changes billing, throughput, streams, deletion protection,
// and adds or deletes global secondary indexes. A new index is backfilled
// in the background (backfill.go): it is CREATING until then.
//
// It works on a copy of the table's metadata under the table's ddl lock
// (lockDDL): each of its jobs below checks its part of the request and
// changes the copy, in the order DynamoDB reports errors, and the first
// error ends the call with the table unchanged. Only when every job has
// passed are the new indexes' ids allocated, the deleted indexes' entries
// dropped and the metadata written, in one batch (applyTableUpdate).
func (s *Store) UpdateTable(in *UpdateTableInput) (*TableDescription, error) {
	if err := checkUpdateTableShape(in); err != nil {
		return nil, err
	}
	old, unlock, ok := s.lockDDL(*in.TableName)
	if !ok {
		return nil, notFound("Requested resource not found: Table: %s not found", *in.TableName)
	}
	defer unlock()
	if in.AttributeDefinitions == nil && in.BillingMode == "" && in.ProvisionedThroughput == nil && in.GlobalSecondaryIndexUpdates == nil &&
		in.StreamSpecification == nil && in.DeletionProtectionEnabled == nil && in.TableClass == "" {
		return nil, validationf("At least one of ProvisionedThroughput, BillingMode, UpdateStreamEnabled, GlobalSecondaryIndexUpdates or SSESpecification or ReplicaUpdates is required")
	}
	m := *old.meta
	m.Indexes = append([]*indexMeta(nil), old.meta.Indexes...)
	now := s.opts.Now()
	updateBillingMode(&m, in.BillingMode, now)
	if err := updateThroughput(&m, old.meta, in.ProvisionedThroughput); err != nil {
		return nil, err
	}
	if in.DeletionProtectionEnabled != nil {
		m.DeletionProtection = *in.DeletionProtectionEnabled
	}
	if in.TableClass != "" {
		m.TableClass = in.TableClass
	}
	if err := s.updateStream(&m, in.StreamSpecification, now); err != nil {
		return nil, err
	}
	defs, err := updatedDefinitions(&m, in.AttributeDefinitions)
	if err != nil {
		return nil, err
	}
	dropped, err := updateIndexes(&m, in.GlobalSecondaryIndexUpdates, defs)
	if err != nil {
		return nil, err
	}
	m.keepUsedDefinitions(m.AttributeDefinitions, in.AttributeDefinitions)
	t, err := s.applyTableUpdate(&m, dropped)
	if err != nil {
		return nil, err
	}
	d := s.describe(t, false)
	d.TableStatus = "UPDATING"
	return d, nil
}

// checkUpdateTableShape checks each member of an UpdateTable request on its
// own and reports every failure at once.
func checkUpdateTableShape(in *UpdateTableInput) *Error {
	var c constraintErrors
	checkTableName(&c, "tableName", in.TableName)
	for i, u := range in.GlobalSecondaryIndexUpdates {
		if u.Create != nil {
			checkName(&c, fmt.Sprintf("globalSecondaryIndexUpdates.%d.member.create.indexName", i+1), u.Create.IndexName)
			checkKeySchema(&c, fmt.Sprintf("globalSecondaryIndexUpdates.%d.member.create.keySchema", i+1), u.Create.KeySchema)
			checkNonKeyNames(&c, fmt.Sprintf("globalSecondaryIndexUpdates.%d.member.create", i+1), u.Create.Projection)
		}
	}
	checkAttrDefNames(&c, in.AttributeDefinitions)
	if in.BillingMode != "" && in.BillingMode != "PROVISIONED" && in.BillingMode != "PAY_PER_REQUEST" {
		c.add("Value '%s' at 'billingMode' failed to satisfy constraint: Member must satisfy enum value set: [PROVISIONED, PAY_PER_REQUEST]", in.BillingMode)
	}
	return c.err()
}

// updateBillingMode switches m to billing mode mode ("": unchanged).
// Switching to PAY_PER_REQUEST drops the table's and its indexes'
// provisioned throughput; switching to PROVISIONED needs a throughput,
// which updateThroughput checks.
func updateBillingMode(m *tableMeta, mode string, now time.Time) {
	if mode == "" || mode == m.BillingMode {
		return
	}
	m.BillingMode = mode
	if mode == "PAY_PER_REQUEST" {
		m.ProvisionedThroughput = nil
		m.BillingModeChangedMillis = now.UnixMilli()
		for i, im := range m.Indexes {
			cp := *im
			cp.ProvisionedThroughput = nil
			m.Indexes[i] = &cp
		}
	}
}

// updateThroughput sets m's provisioned throughput to pt (nil: unchanged),
// refusing one that does not fit m's billing mode, one equal to the
// current one (old is the metadata before the update), and a PROVISIONED
// table left without any.
func updateThroughput(m, old *tableMeta, pt *ProvisionedThroughput) *Error {
	if pt == nil {
		if m.BillingMode == "PROVISIONED" && m.ProvisionedThroughput == nil {
			return invalidParam("ReadCapacityUnits and WriteCapacityUnits must both be specified when BillingMode is PROVISIONED")
		}
		return nil
	}
	if err := validateThroughput(m.BillingMode, pt, "table"); err != nil {
		return err
	}
	if cur := old.ProvisionedThroughput; cur != nil && m.BillingMode == old.BillingMode && cur.ReadCapacityUnits != nil && cur.WriteCapacityUnits != nil &&
		*cur.ReadCapacityUnits == *pt.ReadCapacityUnits && *cur.WriteCapacityUnits == *pt.WriteCapacityUnits {
		return validationf("The provisioned throughput for the table will not change. The requested value equals the current value. Current ReadCapacityUnits provisioned for the table: %d. Requested ReadCapacityUnits: %d. Current WriteCapacityUnits provisioned for the table: %d. Requested WriteCapacityUnits: %d. Refer to the Amazon DynamoDB Developer Guide for current limits and how to request higher limits.",
			*cur.ReadCapacityUnits, *pt.ReadCapacityUnits, *cur.WriteCapacityUnits, *pt.WriteCapacityUnits)
	}
	m.ProvisionedThroughput = pt
	return nil
}

// updateStream enables or disables m's stream as ss says (nil:
// unchanged). Enabling starts a new stream (a new label); disabling keeps
// the stream readable, marked with the time it was disabled (deletedtables.go).
func (s *Store) updateStream(m *tableMeta, ss *StreamSpecification, now time.Time) *Error {
	if ss == nil {
		return nil
	}
	if err := validateStreamSpec(ss); err != nil {
		return err
	}
	if *ss.StreamEnabled {
		if m.Stream != nil {
			return invalidParam("Table already has an enabled stream: %s", s.arn(m.Name)+"/stream/"+m.StreamLabel)
		}
		m.Stream = ss
		m.StreamLabel = streamLabel(now)
		m.Streams = append(append([]streamMeta(nil), m.Streams...), streamMeta{Label: m.StreamLabel, ViewType: ss.StreamViewType, CreatedMillis: now.UnixMilli()})
		return nil
	}
	if m.Stream == nil {
		return invalidParam("Table already has no stream enabled")
	}
	m.Stream = nil
	m.Streams = append([]streamMeta(nil), m.Streams...)
	if n := len(m.Streams); n > 0 {
		m.Streams[n-1].DisabledMillis = now.UnixMilli()
	}
	return nil
}

// updatedDefinitions returns m's attribute definitions with those of the
// request added (name -> type), refusing a change of an existing one's type.
func updatedDefinitions(m *tableMeta, add []AttributeDefinition) (map[string]string, *Error) {
	defs := map[string]string{}
	for _, d := range m.AttributeDefinitions {
		defs[d.AttributeName] = d.AttributeType
	}
	for _, d := range add {
		if t, ok := defs[d.AttributeName]; ok && t != d.AttributeType {
			return nil, invalidParam("Cannot change the type of an existing attribute definition: %s", d.AttributeName)
		}
		defs[d.AttributeName] = d.AttributeType
	}
	return defs, nil
}

// updateIndexes applies the GlobalSecondaryIndexUpdates us to m's indexes,
// checking each against defs (the attribute definitions after the update):
// a created index is appended with id 0 (applyTableUpdate allocates it), a
// deleted one is taken out of m and returned in dropped, an updated one
// gets its new throughput. At most one index may be created or deleted per
// call.
func updateIndexes(m *tableMeta, us []GSIUpdate, defs map[string]string) (dropped []*indexMeta, err *Error) {
	online := 0
	for _, u := range us {
		if u.Create != nil || u.Delete != nil {
			online++
		}
	}
	if online > 1 {
		return nil, &Error{Type: "LimitExceededException", Message: "Subscriber limit exceeded: Only 1 online index can be created or deleted simultaneously per table"}
	}
	for _, u := range us {
		n := 0
		if u.Create != nil {
			n++
		}
		if u.Delete != nil {
			n++
		}
		if u.Update != nil {
			n++
		}
		if n != 1 {
			return nil, invalidParam("One of GlobalSecondaryIndexUpdate.Create, GlobalSecondaryIndexUpdate.Update or GlobalSecondaryIndexUpdate.Delete must be specified")
		}
		switch {
		case u.Create != nil:
			if err := createIndex(m, u.Create, defs); err != nil {
				return nil, err
			}
		case u.Delete != nil:
			im, err := deleteIndex(m, u.Delete.IndexName)
			if err != nil {
				return nil, err
			}
			dropped = append(dropped, im)
		case u.Update != nil:
			found := false
			for i, im := range m.Indexes {
				if im.Name == u.Update.IndexName && im.Global {
					cp := *im
					cp.ProvisionedThroughput = u.Update.ProvisionedThroughput
					m.Indexes[i] = &cp
					found = true
				}
			}
			if !found {
				return nil, notFound("Requested resource not found: Index: %s not found in table %s", u.Update.IndexName, m.Name)
			}
		}
	}
	return dropped, nil
}

// createIndex checks a new GSI ix of m and appends it to m's indexes, with
// id 0, CREATING and to be backfilled.
func createIndex(m *tableMeta, ix *IndexSpec, defs map[string]string) *Error {
	if err := validateIndexKeySchema(ix.KeySchema, defs); err != nil {
		return err
	}
	if err := validateProjection(ix.Projection, ix.IndexName); err != nil {
		return err
	}
	if err := validateThroughput(m.BillingMode, ix.ProvisionedThroughput, ix.IndexName); err != nil {
		return err
	}
	for _, im := range m.Indexes {
		if im.Name == ix.IndexName {
			return validationf("One or more parameter values were invalid: Index with name %s already exists", ix.IndexName)
		}
	}
	gsis := 0
	for _, im := range m.Indexes {
		if im.Global {
			gsis++
		}
	}
	if gsis >= maxGSIs {
		return &Error{Type: "LimitExceededException", Message: fmt.Sprintf("Subscriber limit exceeded: The number of global secondary indexes exceeds the limit of %d", maxGSIs)}
	}
	im := &indexMeta{Name: ix.IndexName, Global: true, KeySchema: ix.KeySchema, Projection: *ix.Projection, Status: "CREATING", Backfilling: true}
	if m.BillingMode == "PROVISIONED" {
		im.ProvisionedThroughput = ix.ProvisionedThroughput
	}
	m.Indexes = append(m.Indexes, im)
	return nil
}

// deleteIndex takes the GSI called name out of m's indexes and returns it.
func deleteIndex(m *tableMeta, name string) (*indexMeta, *Error) {
	found := -1
	for i, im := range m.Indexes {
		if im.Name == name && im.Global {
			found = i
		}
	}
	if found < 0 {
		return nil, notFound("Requested resource not found: Index: %s not found in table %s", name, m.Name)
	}
	im := m.Indexes[found]
	m.Indexes = append(m.Indexes[:found:found], m.Indexes[found+1:]...)
	return im, nil
}

// applyTableUpdate writes m, the checked result of an UpdateTable, in one
// batch: ids for its new indexes (those with id 0), the removal of the
// entries of the dropped indexes, and the metadata. It then publishes the
// table and starts the new indexes' backfills. s.mu and the table's ddl
// lock are held (lockDDL).
func (s *Store) applyTableUpdate(m *tableMeta, dropped []*indexMeta) (*table, *Error) {
	b := s.db.NewBatch()
	defer b.Close()
	var created []*indexMeta
	for _, im := range m.Indexes {
		if im.ID == 0 {
			im.ID = s.allocIDLocked(b)
			created = append(created, im)
		}
	}
	for _, im := range dropped {
		p := idPrefix(nsIndex, im.ID)
		b.DeleteRange(p, prefixSuccessor(p), nil)
	}
	if err := s.putMeta(b, m); err != nil {
		return nil, internal(err)
	}
	if err := b.Commit(s.wo); err != nil {
		return nil, internal(err)
	}
	t := newTable(m)
	s.tables[m.Name] = t
	for _, im := range created {
		s.startBackfill(m.Name, im.ID)
	}
	return t, nil
}
