module contextd

go 1.26.8

require (
	github.com/danielgtaylor/huma/v2 v2.37.2 // indirect
	github.com/go-chi/chi/v5 v5.5.0 // indirect
	github.com/google/go-cmp v0.7.0 // indirect
	github.com/google/uuid v1.6.0 // indirect
	github.com/mattn/go-sqlite3 v1.14.53 // indirect
	github.com/prometheus/client_golang v1.25.0 // indirect
)
