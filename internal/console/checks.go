package console

import "net/http"

// ChecksStore is what the Checks dashboard needs of Checks' store.
type ChecksStore interface{}

func (c *Console) checksRoutes(m *http.ServeMux) {}
