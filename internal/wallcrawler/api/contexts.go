package api

// registerContextRoutes adds the /v1/contexts routes.
func (h *Handler) registerContextRoutes() {}
