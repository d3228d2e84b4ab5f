package ddb

import (
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/cockroachdb/pebble"
	"github.com/google/uuid"

	"github.com/quarrydb/quarry/ddb/attr"
)

// validName reports whether name matches DynamoDB's pattern for table and
// index names, [a-zA-Z0-9_.-]+. Every request names a table: a byte loop
// checks it at a fraction of a regular expression's cost.
func validName(name string) bool {
	if name == "" {
		return false
	}
	for i := 0; i < len(name); i++ {
		switch c := name[i]; {
		case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9', c == '_', c == '.', c == '-':
		default:
			return false
		}
	}
	return true
}

const (
	maxLSIs = 5
	maxGSIs = 20
	// maxProjectedAttrs is the limit on NonKeyAttributes across all indexes.
	maxProjectedAttrs = 100
)

func checkTableName(c *constraintErrors, field string, name *string) {
	if name == nil {
		c.add("Value null at '%s' failed to satisfy constraint: Member must not be null", field)
		return
	}
	checkName(c, field, *name)
}

func checkName(c *constraintErrors, field, name string) {
	if name == "" {
		c.add("Value '' at '%s' failed to satisfy constraint: Member must have length greater than or equal to 1", field)
		return
	}
	if !validName(name) {
		c.add("Value '%s' at '%s' failed to satisfy constraint: Member must satisfy regular expression pattern: [a-zA-Z0-9_.-]+", name, field)
	}
	if len(name) < 3 {
		c.add("Value '%s' at '%s' failed to satisfy constraint: Member must have length greater than or equal to 3", name, field)
	}
	if len(name) > 255 {
		c.add("Value '%s' at '%s' failed to satisfy constraint: Member must have length less than or equal to 255", name, field)
	}
}

func checkKeySchema(c *constraintErrors, field string, ks []KeySchemaElement) {
	if ks == nil {
		c.add("Value null at '%s' failed to satisfy constraint: Member must not be null", field)
		return
	}
	if len(ks) < 1 || len(ks) > 2 {
		c.add("Value '%s' at '%s' failed to satisfy constraint: Member must have length less than or equal to 2", fmtKeySchema(ks), field)
	}
	for i, e := range ks {
		if e.KeyType != "HASH" && e.KeyType != "RANGE" {
			c.add("Value '%s' at '%s.%d.member.keyType' failed to satisfy constraint: Member must satisfy enum value set: [HASH, RANGE]", e.KeyType, field, i+1)
		}
		if e.AttributeName == "" {
			c.add("Value '' at '%s.%d.member.attributeName' failed to satisfy constraint: Member must have length greater than or equal to 1", field, i+1)
		}
		checkKeyAttrName(c, fmt.Sprintf("%s.%d.member.attributeName", field, i+1), e.AttributeName)
	}
}

// maxKeyAttrName is the length limit, in bytes, of the name of a key
// attribute, of an attribute definition and of a projected attribute.
const maxKeyAttrName = 255

// checkKeyAttrName checks the length of a key attribute's name (a key
// schema element's or an attribute definition's).
func checkKeyAttrName(c *constraintErrors, field, name string) {
	if len(name) > maxKeyAttrName {
		c.add("Value '%s' at '%s' failed to satisfy constraint: Member must have length less than or equal to %d", name, field, maxKeyAttrName)
	}
}

// checkAttrDefNames checks the lengths of the names of attribute
// definitions.
func checkAttrDefNames(c *constraintErrors, defs []AttributeDefinition) {
	for i, d := range defs {
		checkKeyAttrName(c, fmt.Sprintf("attributeDefinitions.%d.member.attributeName", i+1), d.AttributeName)
	}
}

// checkNonKeyNames checks the lengths of an index projection's
// NonKeyAttributes; field names the index.
func checkNonKeyNames(c *constraintErrors, field string, p *Projection) {
	if p == nil {
		return
	}
	for _, a := range p.NonKeyAttributes {
		if len(a) > maxKeyAttrName || a == "" {
			c.add("Value '[%s]' at '%s.projection.nonKeyAttributes' failed to satisfy constraint: Member must satisfy constraint: [Member must have length less than or equal to %d, Member must have length greater than or equal to 1]", strings.Join(p.NonKeyAttributes, ", "), field, maxKeyAttrName)
			return
		}
	}
}

func fmtKeySchema(ks []KeySchemaElement) string {
	parts := make([]string, len(ks))
	for i, e := range ks {
		parts[i] = fmt.Sprintf("KeySchemaElement(attributeName=%s, keyType=%s)", e.AttributeName, e.KeyType)
	}
	return "[" + strings.Join(parts, ", ") + "]"
}

// validateKeySchema checks the semantic rules of a key schema and returns
// an error message, or "".
func validateKeySchema(ks []KeySchemaElement, defs map[string]string) *Error {
	return validateKeySchemaOf(ks, defs, false)
}

// validateIndexKeySchema checks the key schema of a secondary index: the
// same rules, but DynamoDB names a HASH and RANGE of the same attribute
// plainly (for a table it reports a missing definition).
func validateIndexKeySchema(ks []KeySchemaElement, defs map[string]string) *Error {
	return validateKeySchemaOf(ks, defs, true)
}

func validateKeySchemaOf(ks []KeySchemaElement, defs map[string]string, index bool) *Error {
	if ks[0].KeyType != "HASH" {
		return invalidParam("Invalid KeySchema: The first KeySchemaElement is not a HASH key type")
	}
	if len(ks) == 2 {
		if ks[0].AttributeName == ks[1].AttributeName {
			if index {
				return validationf("Both the Hash Key and the Range Key element in the KeySchema have the same name")
			}
			return validationf("Invalid KeySchema: Some index key attribute have no definition")
		}
		if ks[1].KeyType != "RANGE" {
			return invalidParam("Invalid KeySchema: The second KeySchemaElement is not a RANGE key type")
		}
	}
	for _, e := range ks {
		if _, ok := defs[e.AttributeName]; !ok {
			return invalidParam("Some index key attributes are not defined in AttributeDefinitions. Keys: [%s], AttributeDefinitions: [%s]", keyNames(ks), defNames(defs))
		}
	}
	return nil
}

func keyNames(ks []KeySchemaElement) string {
	n := make([]string, len(ks))
	for i, e := range ks {
		n[i] = e.AttributeName
	}
	return strings.Join(n, ", ")
}

func defNames(defs map[string]string) string {
	n := make([]string, 0, len(defs))
	for k := range defs {
		n = append(n, k)
	}
	sort.Strings(n)
	return strings.Join(n, ", ")
}

func validateProjection(p *Projection, indexName string) *Error {
	if p == nil {
		return validationf("1 validation error detected: Value null at 'projection' failed to satisfy constraint: Member must not be null")
	}
	switch p.ProjectionType {
	case "ALL", "KEYS_ONLY":
		if len(p.NonKeyAttributes) > 0 {
			return invalidParam("ProjectionType is %s, but NonKeyAttributes is specified", p.ProjectionType)
		}
	case "INCLUDE":
		if len(p.NonKeyAttributes) == 0 {
			return invalidParam("NonKeyAttributes must not be empty")
		}
		seen := map[string]bool{}
		for _, a := range p.NonKeyAttributes {
			if seen[a] {
				return invalidParam("Duplicate non key attribute: %s", a)
			}
			seen[a] = true
		}
	case "":
		return invalidParam("Unknown ProjectionType: null")
	default:
		return validationf("1 validation error detected: Value '%s' at 'projection.projectionType' failed to satisfy constraint: Member must satisfy enum value set: [ALL, INCLUDE, KEYS_ONLY]", p.ProjectionType)
	}
	return nil
}

func validateThroughput(mode string, pt *ProvisionedThroughput, what string) *Error {
	if mode == "PAY_PER_REQUEST" {
		if pt != nil && (pt.ReadCapacityUnits != nil || pt.WriteCapacityUnits != nil) {
			return invalidParam("Neither ReadCapacityUnits nor WriteCapacityUnits can be specified when BillingMode is PAY_PER_REQUEST")
		}
		return nil
	}
	if pt == nil || pt.ReadCapacityUnits == nil || pt.WriteCapacityUnits == nil {
		if what == "table" {
			return invalidParam("ReadCapacityUnits and WriteCapacityUnits must both be specified when BillingMode is PROVISIONED")
		}
		return invalidParam("ProvisionedThroughput must be specified for index: %s", what)
	}
	if *pt.ReadCapacityUnits < 1 || *pt.WriteCapacityUnits < 1 {
		return validationf("1 validation error detected: Value '%d' at 'provisionedThroughput.readCapacityUnits' failed to satisfy constraint: Member must have value greater than or equal to 1", min(*pt.ReadCapacityUnits, *pt.WriteCapacityUnits))
	}
	return nil
}

// newUUID returns a random (version 4) UUID in its canonical form.
func newUUID() string { return uuid.NewString() }

// CreateTable creates a table. It validates the whole request first, in
// DynamoDB's order (validateCreateTable), and only then allocates the
// table's and its indexes' ids and writes them (createTable): a refused
// request leaves no trace, not even a used id.
func (s *Store) CreateTable(in *CreateTableInput) (*TableDescription, error) {
	mode, err := validateCreateTable(in)
	if err != nil {
		return nil, err
	}
	return s.createTable(in, mode)
}

// validateCreateTable checks a CreateTable request in the order DynamoDB
// does and returns the table's billing mode: first the members' shapes
// (one ValidationException listing every failed constraint, as DynamoDB's
// model validation does), then the rules between members, each refused on
// its own, the first one found.
func validateCreateTable(in *CreateTableInput) (mode string, err error) {
	if err := checkCreateTableShape(in); err != nil {
		return "", err
	}
	mode = in.BillingMode
	if mode == "" {
		mode = "PROVISIONED"
	}
	if err := validateThroughput(mode, in.ProvisionedThroughput, "table"); err != nil {
		return "", err
	}
	defs := map[string]string{}
	for _, d := range in.AttributeDefinitions {
		if _, dup := defs[d.AttributeName]; dup {
			return "", invalidParam("Duplicate AttributeName in AttributeDefinitions: %s", d.AttributeName)
		}
		defs[d.AttributeName] = d.AttributeType
	}
	if err := validateKeySchema(in.KeySchema, defs); err != nil {
		return "", err
	}
	if err := validateCreateIndexes(in, mode, defs); err != nil {
		return "", err
	}
	if in.StreamSpecification != nil {
		if err := validateStreamSpec(in.StreamSpecification); err != nil {
			return "", err
		}
	}
	// Tags are validated, like everything else, before the table exists.
	if len(in.Tags) > maxTags {
		return "", invalidParam("The number of tags exceeds the limit of %d", maxTags)
	}
	if err := checkTagsText(in.Tags); err != nil {
		return "", err
	}
	return mode, nil
}

// checkCreateTableShape checks each member of a CreateTable request on its
// own (nulls, lengths, patterns, enums) and reports every failure at once.
func checkCreateTableShape(in *CreateTableInput) *Error {
	var c constraintErrors
	if in.TableName == nil {
		c.missing("TableName") // CreateTable words it this way; item operations do not
	}
	checkTableName(&c, "tableName", in.TableName)
	checkKeySchema(&c, "keySchema", in.KeySchema)
	if in.AttributeDefinitions == nil {
		c.add("Value null at 'attributeDefinitions' failed to satisfy constraint: Member must not be null")
	}
	for i, d := range in.AttributeDefinitions {
		if d.nameNull {
			c.add("Value null at 'attributeDefinitions.%d.member.attributeName' failed to satisfy constraint: Member must not be null", i+1)
		}
		switch {
		case d.typeNull:
			c.add("Value null at 'attributeDefinitions.%d.member.attributeType' failed to satisfy constraint: Member must not be null", i+1)
		case d.AttributeType != "S" && d.AttributeType != "N" && d.AttributeType != "B":
			c.add("Value '%s' at 'attributeDefinitions.%d.member.attributeType' failed to satisfy constraint: Member must satisfy enum value set: [B, N, S]", d.AttributeType, i+1)
		}
	}
	checkAttrDefNames(&c, in.AttributeDefinitions)
	if in.BillingMode != "" && in.BillingMode != "PROVISIONED" && in.BillingMode != "PAY_PER_REQUEST" {
		c.add("Value '%s' at 'billingMode' failed to satisfy constraint: Member must satisfy enum value set: [PROVISIONED, PAY_PER_REQUEST]", in.BillingMode)
	}
	for i, ix := range in.GlobalSecondaryIndexes {
		checkName(&c, fmt.Sprintf("globalSecondaryIndexes.%d.member.indexName", i+1), ix.IndexName)
		checkKeySchema(&c, fmt.Sprintf("globalSecondaryIndexes.%d.member.keySchema", i+1), ix.KeySchema)
		checkNonKeyNames(&c, fmt.Sprintf("globalSecondaryIndexes.%d.member", i+1), ix.Projection)
	}
	for i, ix := range in.LocalSecondaryIndexes {
		checkName(&c, fmt.Sprintf("localSecondaryIndexes.%d.member.indexName", i+1), ix.IndexName)
		checkKeySchema(&c, fmt.Sprintf("localSecondaryIndexes.%d.member.keySchema", i+1), ix.KeySchema)
		checkNonKeyNames(&c, fmt.Sprintf("localSecondaryIndexes.%d.member", i+1), ix.Projection)
	}
	checkTagList(&c, in.Tags)
	return c.err()
}

// validateCreateIndexes checks the secondary indexes of a CreateTable
// request against the table's key schema and attribute definitions defs:
// the list limits, then each LSI and each GSI in order, then the totals
// (projected attributes, and every definition used by some key schema).
func validateCreateIndexes(in *CreateTableInput, mode string, defs map[string]string) *Error {
	used := map[string]bool{}
	for _, e := range in.KeySchema {
		used[e.AttributeName] = true
	}
	if in.LocalSecondaryIndexes != nil && len(in.LocalSecondaryIndexes) == 0 {
		return invalidParam("List of LocalSecondaryIndexes is empty")
	}
	if in.GlobalSecondaryIndexes != nil && len(in.GlobalSecondaryIndexes) == 0 {
		return invalidParam("List of GlobalSecondaryIndexes is empty")
	}
	if len(in.LocalSecondaryIndexes) > maxLSIs {
		return invalidParam("Number of LocalSecondaryIndexes exceeds per-table limit of %d", maxLSIs)
	}
	if len(in.GlobalSecondaryIndexes) > maxGSIs {
		return invalidParam("GlobalSecondaryIndex count exceeds the per-table limit of %d", maxGSIs)
	}
	names := map[string]bool{}
	nonKey := 0
	// register records a validated index: its name (once), its projected
	// attributes and its key attributes.
	register := func(ix IndexSpec) *Error {
		if names[ix.IndexName] {
			return invalidParam("Duplicate index name: %s", ix.IndexName)
		}
		names[ix.IndexName] = true
		nonKey += len(ix.Projection.NonKeyAttributes)
		for _, e := range ix.KeySchema {
			used[e.AttributeName] = true
		}
		return nil
	}
	for _, ix := range in.LocalSecondaryIndexes {
		if len(in.KeySchema) < 2 {
			return invalidParam("Table KeySchema does not have a range key, which is required when specifying a LocalSecondaryIndex")
		}
		if err := validateIndexKeySchema(ix.KeySchema, defs); err != nil {
			return err
		}
		if len(ix.KeySchema) != 2 {
			return invalidParam("Index KeySchema does not have a range key for index: %s", ix.IndexName)
		}
		if ix.KeySchema[0].AttributeName != in.KeySchema[0].AttributeName {
			return invalidParam("Index KeySchema does not have the same leading hash key as table KeySchema for index: %s. index hash key: %s, table hash key: %s", ix.IndexName, ix.KeySchema[0].AttributeName, in.KeySchema[0].AttributeName)
		}
		if err := validateProjection(ix.Projection, ix.IndexName); err != nil {
			return err
		}
		if err := register(ix); err != nil {
			return err
		}
	}
	for _, ix := range in.GlobalSecondaryIndexes {
		if err := validateIndexKeySchema(ix.KeySchema, defs); err != nil {
			return err
		}
		if err := validateProjection(ix.Projection, ix.IndexName); err != nil {
			return err
		}
		if err := validateThroughput(mode, ix.ProvisionedThroughput, ix.IndexName); err != nil {
			return err
		}
		if err := register(ix); err != nil {
			return err
		}
	}
	if nonKey > maxProjectedAttrs {
		return invalidParam("The number of attributes in key schema must match the number of attributes defined in attribute definitions.")
	}
	if len(used) != len(defs) {
		return invalidParam("Number of attributes in KeySchema does not exactly match number of attributes defined in AttributeDefinitions")
	}
	return nil
}

// createTable creates the table of a validated CreateTable request with
// billing mode mode. Under s.mu it refuses a name in use (the one check
// that needs the store's state) and only then allocates the ids of the
// table and of its indexes, in the batch that writes its metadata.
func (s *Store) createTable(in *CreateTableInput, mode string) (*TableDescription, error) {
	now := s.opts.Now()
	m := &tableMeta{
		Name:                 *in.TableName,
		KeySchema:            in.KeySchema,
		AttributeDefinitions: in.AttributeDefinitions,
		BillingMode:          mode,
		TableClass:           in.TableClass,
		CreatedMillis:        now.UnixMilli(),
		Tags:                 in.Tags,
	}
	if mode == "PROVISIONED" {
		m.ProvisionedThroughput = in.ProvisionedThroughput
	} else {
		m.BillingModeChangedMillis = now.UnixMilli()
	}
	if in.DeletionProtectionEnabled != nil {
		m.DeletionProtection = *in.DeletionProtectionEnabled
	}
	if in.StreamSpecification != nil && in.StreamSpecification.StreamEnabled != nil && *in.StreamSpecification.StreamEnabled {
		m.Stream = in.StreamSpecification
		m.StreamLabel = streamLabel(now)
		m.Streams = append(m.Streams, streamMeta{Label: m.StreamLabel, ViewType: m.Stream.StreamViewType, CreatedMillis: now.UnixMilli()})
	}

	s.mu.Lock()
	defer s.mu.Unlock()
	if _, exists := s.tables[m.Name]; exists {
		return nil, inUse("Table already exists: %s", m.Name)
	}
	b := s.db.NewBatch()
	defer b.Close()
	m.TableID = newUUID()
	m.ID = s.allocIDLocked(b)
	for _, ix := range in.LocalSecondaryIndexes {
		m.Indexes = append(m.Indexes, &indexMeta{ID: s.allocIDLocked(b), Name: ix.IndexName, KeySchema: ix.KeySchema, Projection: *ix.Projection, Status: "ACTIVE"})
	}
	for _, ix := range in.GlobalSecondaryIndexes {
		im := &indexMeta{ID: s.allocIDLocked(b), Name: ix.IndexName, Global: true, KeySchema: ix.KeySchema, Projection: *ix.Projection, Status: "ACTIVE"}
		if mode == "PROVISIONED" {
			im.ProvisionedThroughput = ix.ProvisionedThroughput
		}
		m.Indexes = append(m.Indexes, im)
	}
	if err := s.putMeta(b, m); err != nil {
		return nil, internal(err)
	}
	if err := b.Commit(s.wo); err != nil {
		return nil, internal(err)
	}
	t := newTable(m)
	s.tables[m.Name] = t
	d := s.describe(t, false)
	d.TableStatus = "CREATING"
	for _, g := range d.GlobalSecondaryIndexes {
		g.IndexStatus = "CREATING"
	}
	return d, nil
}

func validateStreamSpec(ss *StreamSpecification) *Error {
	if ss.StreamEnabled == nil {
		return validationf("1 validation error detected: Value null at 'streamSpecification.streamEnabled' failed to satisfy constraint: Member must not be null")
	}
	if *ss.StreamEnabled {
		switch ss.StreamViewType {
		case "NEW_IMAGE", "OLD_IMAGE", "NEW_AND_OLD_IMAGES", "KEYS_ONLY":
		case "":
			return invalidParam("You must specify a StreamViewType when enabling a stream")
		default:
			return validationf("1 validation error detected: Value '%s' at 'streamSpecification.streamViewType' failed to satisfy constraint: Member must satisfy enum value set: [NEW_IMAGE, OLD_IMAGE, NEW_AND_OLD_IMAGES, KEYS_ONLY]", ss.StreamViewType)
		}
	} else if ss.StreamViewType != "" {
		return invalidParam("You cannot modify stream view type when disabling a stream")
	}
	return nil
}

func streamLabel(t time.Time) string { return t.UTC().Format("2006-01-02T15:04:05.000") }

// TableDescription is DescribeTable's description of a table.
type TableDescription struct {
	AttributeDefinitions      []AttributeDefinition `json:"AttributeDefinitions"`
	TableName                 string                `json:"TableName"`
	KeySchema                 []KeySchemaElement    `json:"KeySchema"`
	TableStatus               string                `json:"TableStatus"`
	CreationDateTime          float64               `json:"CreationDateTime"`
	ProvisionedThroughput     throughputDesc        `json:"ProvisionedThroughput"`
	TableSizeBytes            int64                 `json:"TableSizeBytes"`
	ItemCount                 int64                 `json:"ItemCount"`
	TableArn                  string                `json:"TableArn"`
	TableID                   string                `json:"TableId"`
	BillingModeSummary        *billingSummary       `json:"BillingModeSummary,omitempty"`
	LocalSecondaryIndexes     []*indexDesc          `json:"LocalSecondaryIndexes,omitempty"`
	GlobalSecondaryIndexes    []*indexDesc          `json:"GlobalSecondaryIndexes,omitempty"`
	StreamSpecification       *StreamSpecification  `json:"StreamSpecification,omitempty"`
	LatestStreamLabel         string                `json:"LatestStreamLabel,omitempty"`
	LatestStreamArn           string                `json:"LatestStreamArn,omitempty"`
	DeletionProtectionEnabled bool                  `json:"DeletionProtectionEnabled"`
	TableClassSummary         *tableClassSummary    `json:"TableClassSummary,omitempty"`
}

// deletingDescription is the TableDescription DeleteTable answers with:
// DynamoDB returns only these members of a table being deleted.
type deletingDescription struct {
	TableName             string               `json:"TableName"`
	TableStatus           string               `json:"TableStatus"`
	TableArn              string               `json:"TableArn"`
	TableID               string               `json:"TableId"`
	ItemCount             int64                `json:"ItemCount"`
	TableSizeBytes        int64                `json:"TableSizeBytes"`
	ProvisionedThroughput throughputDesc       `json:"ProvisionedThroughput"`
	BillingModeSummary    *billingSummary      `json:"BillingModeSummary,omitempty"`
	StreamSpecification   *StreamSpecification `json:"StreamSpecification,omitempty"`
	LatestStreamLabel     string               `json:"LatestStreamLabel,omitempty"`
	LatestStreamArn       string               `json:"LatestStreamArn,omitempty"`
}

// deleteTableWire is DeleteTable on the wire, which answers with fewer
// members than the Go API's TableDescription.
func (s *Store) deleteTableWire(in *TableNameInput) (*deletingDescription, error) {
	d, err := s.DeleteTable(in)
	if err != nil {
		return nil, err
	}
	return &deletingDescription{
		TableName: d.TableName, TableStatus: d.TableStatus, TableArn: d.TableArn, TableID: d.TableID,
		ItemCount: d.ItemCount, TableSizeBytes: d.TableSizeBytes,
		ProvisionedThroughput: d.ProvisionedThroughput, BillingModeSummary: d.BillingModeSummary,
		StreamSpecification: d.StreamSpecification, LatestStreamLabel: d.LatestStreamLabel, LatestStreamArn: d.LatestStreamArn,
	}, nil
}

type tableClassSummary struct {
	TableClass string `json:"TableClass"`
}

type throughputDesc struct {
	NumberOfDecreasesToday int64 `json:"NumberOfDecreasesToday"`
	ReadCapacityUnits      int64 `json:"ReadCapacityUnits"`
	WriteCapacityUnits     int64 `json:"WriteCapacityUnits"`
}

type billingSummary struct {
	BillingMode                       string  `json:"BillingMode"`
	LastUpdateToPayPerRequestDateTime float64 `json:"LastUpdateToPayPerRequestDateTime,omitempty"`
}

type indexDesc struct {
	IndexName             string             `json:"IndexName"`
	KeySchema             []KeySchemaElement `json:"KeySchema"`
	Projection            Projection         `json:"Projection"`
	IndexStatus           string             `json:"IndexStatus,omitempty"`
	Backfilling           *bool              `json:"Backfilling,omitempty"`
	ProvisionedThroughput *throughputDesc    `json:"ProvisionedThroughput,omitempty"`
	IndexSizeBytes        int64              `json:"IndexSizeBytes"`
	ItemCount             int64              `json:"ItemCount"`
	IndexArn              string             `json:"IndexArn"`
}

func toThroughput(pt *ProvisionedThroughput) throughputDesc {
	var d throughputDesc
	if pt != nil {
		if pt.ReadCapacityUnits != nil {
			d.ReadCapacityUnits = *pt.ReadCapacityUnits
		}
		if pt.WriteCapacityUnits != nil {
			d.WriteCapacityUnits = *pt.WriteCapacityUnits
		}
	}
	return d
}

// countPrefix counts the keys under prefix and their approximate size.
func (s *Store) countPrefix(prefix []byte) (n, size int64) {
	it, err := s.db.NewIter(&pebble.IterOptions{LowerBound: prefix, UpperBound: prefixSuccessor(prefix)})
	if err != nil {
		return 0, 0
	}
	defer it.Close()
	for it.First(); it.Valid(); it.Next() {
		n++
		size += int64(len(it.Value()))
	}
	return n, size
}

func epochSeconds(ms int64) float64 { return float64(ms) / 1000 }

// describe builds the TableDescription of t; counts are skipped when cheap
// is set.
func (s *Store) describe(t *table, withCounts bool) *TableDescription {
	m := t.meta
	d := &TableDescription{
		AttributeDefinitions:      m.AttributeDefinitions,
		TableName:                 m.Name,
		KeySchema:                 m.KeySchema,
		TableStatus:               "ACTIVE",
		CreationDateTime:          epochSeconds(m.CreatedMillis),
		ProvisionedThroughput:     toThroughput(m.ProvisionedThroughput),
		TableArn:                  s.arn(m.Name),
		TableID:                   m.TableID,
		DeletionProtectionEnabled: m.DeletionProtection,
	}
	if m.BillingMode == "PAY_PER_REQUEST" {
		d.BillingModeSummary = &billingSummary{BillingMode: "PAY_PER_REQUEST", LastUpdateToPayPerRequestDateTime: epochSeconds(m.BillingModeChangedMillis)}
	}
	if m.TableClass != "" {
		d.TableClassSummary = &tableClassSummary{TableClass: m.TableClass}
	}
	if withCounts {
		d.ItemCount, d.TableSizeBytes = s.countPrefix(t.prefix)
	}
	for _, ix := range t.indexes {
		im := ix.meta
		id := &indexDesc{
			IndexName:  im.Name,
			KeySchema:  im.KeySchema,
			Projection: im.Projection,
			IndexArn:   s.arn(m.Name) + "/index/" + im.Name,
		}
		if withCounts {
			id.ItemCount, id.IndexSizeBytes = s.countPrefix(ix.prefix)
		}
		if im.Global {
			id.IndexStatus = im.Status
			if im.Backfilling {
				id.IndexStatus = "CREATING"
				bf := true
				id.Backfilling = &bf
				d.TableStatus = "UPDATING"
			}
			pt := toThroughput(im.ProvisionedThroughput)
			id.ProvisionedThroughput = &pt
			d.GlobalSecondaryIndexes = append(d.GlobalSecondaryIndexes, id)
		} else {
			d.LocalSecondaryIndexes = append(d.LocalSecondaryIndexes, id)
		}
	}
	if m.Stream != nil {
		d.StreamSpecification = m.Stream
		d.LatestStreamLabel = m.StreamLabel
		d.LatestStreamArn = s.arn(m.Name) + "/stream/" + m.StreamLabel
	} else if m.StreamLabel != "" {
		d.LatestStreamLabel = m.StreamLabel
		d.LatestStreamArn = s.arn(m.Name) + "/stream/" + m.StreamLabel
	}
	return d
}

// DescribeTable describes a table.
func (s *Store) DescribeTable(in *TableNameInput) (*TableDescription, error) {
	var c constraintErrors
	checkTableName(&c, "tableName", in.TableName)
	if err := c.err(); err != nil {
		return nil, err
	}
	t, err := s.table(*in.TableName)
	if err != nil {
		return nil, notFound("Requested resource not found: Table: %s not found", *in.TableName)
	}
	return s.describe(t, true), nil
}

// ListTablesOutput is the response of ListTables.
type ListTablesOutput struct {
	TableNames             []string `json:"TableNames"`
	LastEvaluatedTableName *string  `json:"LastEvaluatedTableName,omitempty"`
}

// ListTables lists table names in order, 100 at most per page.
func (s *Store) ListTables(in *ListTablesInput) (*ListTablesOutput, error) {
	limit := 100
	var c constraintErrors
	if in.Limit != nil {
		if *in.Limit < 1 {
			c.add("Value '%d' at 'limit' failed to satisfy constraint: Member must have value greater than or equal to 1", *in.Limit)
		} else if *in.Limit > 100 {
			c.add("Value '%d' at 'limit' failed to satisfy constraint: Member must have value less than or equal to 100", *in.Limit)
		} else {
			limit = *in.Limit
		}
	}
	if in.ExclusiveStartTableName != nil {
		checkName(&c, "exclusiveStartTableName", *in.ExclusiveStartTableName)
	}
	if err := c.err(); err != nil {
		return nil, err
	}
	out := &ListTablesOutput{TableNames: []string{}}
	for _, n := range s.tableNames() {
		if in.ExclusiveStartTableName != nil && n <= *in.ExclusiveStartTableName {
			continue
		}
		if len(out.TableNames) == limit {
			last := out.TableNames[limit-1]
			out.LastEvaluatedTableName = &last
			break
		}
		out.TableNames = append(out.TableNames, n)
	}
	return out, nil
}

// DeleteTable deletes a table with its items and indexes.
func (s *Store) DeleteTable(in *TableNameInput) (*TableDescription, error) {
	var c constraintErrors
	checkTableName(&c, "tableName", in.TableName)
	if err := c.err(); err != nil {
		return nil, err
	}
	s.mu.Lock()
	t := s.tables[*in.TableName]
	if t == nil {
		s.mu.Unlock()
		return nil, notFound("Requested resource not found: Table: %s not found", *in.TableName)
	}
	if t.meta.DeletionProtection {
		s.mu.Unlock()
		return nil, validationf("Resource cannot be deleted as it is currently protected against deletion. Disable deletion protection first.")
	}
	delete(s.tables, t.meta.Name)
	s.mu.Unlock()

	t.ddl.Lock() // wait for writes in flight
	defer t.ddl.Unlock()
	d := s.describe(t, true)
	d.TableStatus = "DELETING"
	b := s.db.NewBatch()
	defer b.Close()
	b.Delete(metaKey(t.meta.Name), nil)
	b.DeleteRange(t.prefix, prefixSuccessor(t.prefix), nil)
	// A visible stream outlives its table by 24 hours (deletedtables.go).
	var retired *table
	if now := s.opts.Now(); len(visibleStreams(t.meta, now)) > 0 {
		var err error
		if retired, err = stageRetire(b, t, now); err != nil {
			return nil, internal(err)
		}
	} else {
		lp := logPrefix(t.meta.ID)
		b.DeleteRange(lp, prefixSuccessor(lp), nil)
	}
	ep := expiryPrefix(t.meta.ID)
	b.DeleteRange(ep, prefixSuccessor(ep), nil)
	for _, ix := range t.indexes {
		b.DeleteRange(ix.prefix, prefixSuccessor(ix.prefix), nil)
	}
	if err := b.Commit(s.wo); err != nil {
		return nil, internal(err)
	}
	if retired != nil {
		s.mu.Lock()
		s.retired[retired.meta.ID] = retired
		s.mu.Unlock()
	}
	return d, nil
}

// writeTable returns the table called name with its ddl lock held for
// reading, as every item write needs; unlock MUST be called.
func (s *Store) writeTable(name string) (t *table, unlock func(), err *Error) {
	for {
		t, err = s.table(name)
		if err != nil {
			return nil, nil, err
		}
		t.ddl.RLock()
		s.mu.RLock()
		cur := s.tables[name]
		s.mu.RUnlock()
		if cur == t {
			return t, t.ddl.RUnlock, nil
		}
		t.ddl.RUnlock()
	}
}

// lockDDL returns the table called name with its ddl lock and s.mu held
// for writing, for operations that replace the table's metadata; unlock
// MUST be called. It retries when another such operation replaced the table
// meanwhile, and reports false when the table does not exist.
func (s *Store) lockDDL(name string) (t *table, unlock func(), ok bool) {
	for {
		s.mu.RLock()
		t = s.tables[name]
		s.mu.RUnlock()
		if t == nil {
			return nil, nil, false
		}
		t.ddl.Lock()
		s.mu.Lock()
		if s.tables[name] == t {
			return t, func() { s.mu.Unlock(); t.ddl.Unlock() }, true
		}
		s.mu.Unlock()
		t.ddl.Unlock()
	}
}

// forEachItem calls fn with the storage key and the decoded item of every
// item of t, in key order, skipping (logged and counted for op, see
// corrupt.go) those that cannot be decoded. The key is only valid during
// the call.
func (s *Store) forEachItem(op string, t *table, fn func(key []byte, item attr.Item)) error {
	it, err := s.db.NewIter(&pebble.IterOptions{LowerBound: t.prefix, UpperBound: prefixSuccessor(t.prefix)})
	if err != nil {
		return err
	}
	for it.First(); it.Valid(); it.Next() {
		item, err := decodeItem(it.Value())
		if err != nil {
			s.skipCorruptItem(op, t, it.Key(), err)
			continue
		}
		fn(it.Key(), item)
	}
	return it.Close()
}

// keepUsedDefinitions sets m's attribute definitions to those, taken from
// the candidate lists in order (the first definition of a name wins), that
// a key schema of the table or of one of its indexes uses.
func (m *tableMeta) keepUsedDefinitions(candidates ...[]AttributeDefinition) {
	used := map[string]bool{}
	for _, e := range m.KeySchema {
		used[e.AttributeName] = true
	}
	for _, im := range m.Indexes {
		for _, e := range im.KeySchema {
			used[e.AttributeName] = true
		}
	}
	var defs []AttributeDefinition
	for _, list := range candidates {
		for _, d := range list {
			if used[d.AttributeName] && attrKind(defs, d.AttributeName) == 0 {
				defs = append(defs, d)
			}
		}
	}
	m.AttributeDefinitions = defs
}
