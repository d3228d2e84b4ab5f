package postgres

import (
	"context"

	"github.com/quarrydb/quarry/internal/datashelf/store"
)

var _ store.Admin = (*Store)(nil)

// maintenanceSQL holds the original design's maintenance statements per
// operation. VACUUM cannot run in a transaction block: each statement is
// sent on its own.
var maintenanceSQL = map[store.MaintenanceOp][]string{
	store.MaintainAnalyze: {"ANALYZE navigation", "ANALYZE category", "ANALYZE product", "ANALYZE scrape_job"},
	store.MaintainVacuum: {"VACUUM ANALYZE navigation", "VACUUM ANALYZE category", "VACUUM ANALYZE product",
		"VACUUM ANALYZE scrape_job"},
	store.MaintainReindex: {"REINDEX TABLE product", "REINDEX TABLE scrape_job"},
}

// Maintain implements store.Admin: ANALYZE, VACUUM ANALYZE and REINDEX
// TABLE, as the original design lists them.
func (s *Store) Maintain(ctx context.Context, ops []store.MaintenanceOp) ([]store.MaintenanceStep, error) {
	return store.RunMaintenance(ctx, "postgres", ops, maintenanceSQL, func(ctx context.Context, stmt string) error {
		_, err := s.pool.Exec(ctx, stmt)
		return err
	})
}

// ExportProducts implements store.Admin, reading the rows as the server
// sends them.
func (s *Store) ExportProducts(ctx context.Context, fn func(store.Product) error) error {
	rows, err := s.pool.Query(ctx, `SELECT `+prodCols+` FROM product ORDER BY id`)
	if err != nil {
		return mapErr(err)
	}
	defer rows.Close()
	return store.EachRow(rows, func() (store.Product, error) { return scanProduct(rows) }, fn, mapErr)
}

// ExportCategories implements store.Admin.
func (s *Store) ExportCategories(ctx context.Context, fn func(store.Category) error) error {
	rows, err := s.pool.Query(ctx, `SELECT `+catCols+` FROM category ORDER BY id`)
	if err != nil {
		return mapErr(err)
	}
	defer rows.Close()
	return store.EachRow(rows, func() (store.Category, error) { return scanCat(rows) }, fn, mapErr)
}

// integritySQL holds, per check, a query returning the offending rows'
// descriptions. They are the original design's data-validation counts
// written with NOT EXISTS (so a NULL reference is not an orphan, as with
// the design's NOT IN).
var integritySQL = map[string]string{
	store.CheckOrphanedProducts: `SELECT p.id::text || ' -> category ' || p.category_id::text FROM product p
		WHERE p.category_id IS NOT NULL AND NOT EXISTS (SELECT 1 FROM category c WHERE c.id = p.category_id)
		ORDER BY p.id`,
	store.CheckOrphanedCategories: `SELECT c.id::text || ' -> navigation ' || c.navigation_id::text FROM category c
		WHERE c.navigation_id IS NOT NULL AND NOT EXISTS (SELECT 1 FROM navigation n WHERE n.id = c.navigation_id)
		ORDER BY c.id`,
	store.CheckInvalidJobStatus: `SELECT id::text || ': ' || coalesce(status, 'NULL') FROM scrape_job
		WHERE status IS NULL OR status NOT IN ('queued', 'running', 'completed', 'failed')
		ORDER BY id`,
}

// CheckIntegrity implements store.Admin.
func (s *Store) CheckIntegrity(ctx context.Context) ([]store.Finding, error) {
	return store.RunIntegrity(ctx, "postgres", integritySQL, func(ctx context.Context, query string, row func(string)) error {
		rows, err := s.pool.Query(ctx, query)
		if err != nil {
			return err
		}
		defer rows.Close()
		scan := func() (string, error) {
			var ex string
			err := rows.Scan(&ex)
			return ex, err
		}
		return store.EachRow(rows, scan, func(ex string) error { row(ex); return nil }, nil)
	})
}
