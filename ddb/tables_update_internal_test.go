package ddb

import "testing"

// TestRefusedTableRequestsAllocateNoID: a CreateTable or UpdateTable that
// is refused allocates no id (ids are allocated only after validation
// ends); an accepted one allocates the ids it needs.
func TestRefusedTableRequestsAllocateNoID(t *testing.T) {
	s, err := Open(t.TempDir(), &Options{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	name := "ids"
	create := &CreateTableInput{TableName: &name, BillingMode: "PAY_PER_REQUEST",
		AttributeDefinitions: []AttributeDefinition{{AttributeName: "pk", AttributeType: "S"}, {AttributeName: "g", AttributeType: "S"}},
		KeySchema:            []KeySchemaElement{{AttributeName: "pk", KeyType: "HASH"}},
		GlobalSecondaryIndexes: []IndexSpec{{IndexName: "byG", KeySchema: []KeySchemaElement{{AttributeName: "g", KeyType: "HASH"}},
			Projection: &Projection{ProjectionType: "ALL"}}},
	}
	if _, err := s.CreateTable(create); err != nil {
		t.Fatal(err)
	}
	ids := func() uint64 {
		s.mu.RLock()
		defer s.mu.RUnlock()
		return s.nextID
	}
	after := ids()
	if after < 2 {
		t.Fatalf("next id %d after creating a table with an index, want at least 2", after)
	}
	newGSI := GSIUpdate{Create: &IndexSpec{IndexName: "byG2", KeySchema: []KeySchemaElement{{AttributeName: "g", KeyType: "HASH"}},
		Projection: &Projection{ProjectionType: "ALL"}}}
	missing := GSIUpdate{}
	missing.Update = &struct {
		IndexName             string                 `json:"IndexName"`
		ProvisionedThroughput *ProvisionedThroughput `json:"ProvisionedThroughput"`
	}{IndexName: "nope"}
	refused := []struct {
		name string
		call func() error
	}{
		{"CreateTable of a name in use", func() error { _, err := s.CreateTable(create); return err }},
		{"UpdateTable creating an index, then updating a missing one", func() error {
			_, err := s.UpdateTable(&UpdateTableInput{TableName: &name, GlobalSecondaryIndexUpdates: []GSIUpdate{newGSI, missing}})
			return err
		}},
	}
	for _, r := range refused {
		if err := r.call(); err == nil {
			t.Fatalf("%s: accepted", r.name)
		}
		if got := ids(); got != after {
			t.Errorf("%s: next id %d, want %d (none allocated)", r.name, got, after)
		}
	}
	if _, err := s.UpdateTable(&UpdateTableInput{TableName: &name, GlobalSecondaryIndexUpdates: []GSIUpdate{newGSI}}); err != nil {
		t.Fatal(err)
	}
	if got := ids(); got != after+1 {
		t.Errorf("next id %d after adding an index, want %d", got, after+1)
	}
}
