package ddb

import "testing"

// TestOperationNamesUnique: no operation name is in two APIs, since the
// per-operation metrics count operations by name alone.
func TestOperationNamesUnique(t *testing.T) {
	api := map[string]string{}
	for service, ops := range operations {
		for name := range ops {
			if other, dup := api[name]; dup {
				t.Errorf("operation %s is in %s and %s", name, other, service)
			}
			api[name] = service
		}
	}
}
