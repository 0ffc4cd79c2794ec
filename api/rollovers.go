package api

import "github.com/danielgtaylor/huma/v2"

// InstallRollovers registers the rollover routes on s (DESIGN.md §5.3).
func InstallRollovers(s *Server) {
	if s.rolloversInstalled {
		return
	}
	s.rolloversInstalled = true
	registerRolloverRoutes(s, s.api)
}

func registerRolloverRoutes(s *Server, api huma.API) {}
