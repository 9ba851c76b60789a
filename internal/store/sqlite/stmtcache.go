package sqlite

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"reflect"

	"go.opentelemetry.io/otel/trace"
)

// Statements are prepared once per connection and kept. The driver prepares
// (parses and plans) every statement it is given as text again, and under
// load the parser was a quarter of the gateway's CPU time, much of it on the
// single writer connection while it holds the database's write lock. A
// prepared statement is reset and reused instead.

// maxCachedStatements bounds each connection's cache; statements past it
// run unprepared as before. The store's SQL is a fixed set of constants
// plus a few filter combinations of the dashboard, well under this.
const maxCachedStatements = 256

// stmtCacheConnector opens driver connections that cache their prepared
// statements.
type stmtCacheConnector struct {
	dsn    string
	drv    driver.Driver
	traced bool // statements get spans (trace.go)
}

// openCached is sql.Open of the driver for dsn, with the statement cache.
// With traced, each statement run under a recording span gets one of its
// own (the read pool's: the writer's statements are covered by their
// transaction's span, trace.go).
func openCached(dsn string, traced bool) (*sql.DB, error) {
	// sql.Open connects to nothing: it only finds the registered driver.
	probe, err := sql.Open("sqlite", dsn)
	if err != nil {
		return nil, err
	}
	drv := probe.Driver()
	_ = probe.Close()
	return sql.OpenDB(&stmtCacheConnector{dsn: dsn, drv: drv, traced: traced}), nil
}

// Connect opens a connection of the underlying driver and wraps it.
func (c *stmtCacheConnector) Connect(context.Context) (driver.Conn, error) {
	conn, err := c.drv.Open(c.dsn)
	if err != nil {
		return nil, err
	}
	inner, ok := conn.(cachingInner)
	if !ok {
		_ = conn.Close()
		return nil, errors.New("sqlite: the driver's connection lacks context methods")
	}
	return &stmtCacheConn{inner: inner, stmts: map[string]*cachedStmt{}, traced: c.traced}, nil
}

// Driver returns the underlying driver.
func (c *stmtCacheConnector) Driver() driver.Driver { return c.drv }

// cachingInner is what the wrapper needs of the driver's connection.
type cachingInner interface {
	driver.Conn
	driver.ConnBeginTx
	driver.ConnPrepareContext
	driver.ExecerContext
	driver.QueryerContext
	driver.Pinger
	driver.SessionResetter
	driver.Validator
}

// stmtCacheConn is a driver connection whose Exec and Query reuse prepared
// statements. database/sql uses a connection from one goroutine at a time,
// so the cache needs no lock.
type stmtCacheConn struct {
	inner  cachingInner
	stmts  map[string]*cachedStmt
	traced bool
}

// cachedStmt is a prepared statement; busy while rows of it are open (a
// statement runs once at a time: a second use meanwhile runs unprepared).
type cachedStmt struct {
	ds   driver.Stmt
	busy bool
}

var (
	_ cachingInner                  = (*stmtCacheConn)(nil)
	_ driver.Connector              = (*stmtCacheConnector)(nil)
	_ driver.RowsColumnTypeScanType = (*cachedRows)(nil)
)

// stmt returns the prepared statement of query, preparing it on first use;
// nil when the cache is full or the statement is in use.
func (c *stmtCacheConn) stmt(ctx context.Context, query string) (*cachedStmt, error) {
	if cs, ok := c.stmts[query]; ok {
		if cs.busy {
			return nil, nil
		}
		return cs, nil
	}
	if len(c.stmts) >= maxCachedStatements {
		return nil, nil
	}
	ds, err := c.inner.PrepareContext(ctx, query)
	if err != nil {
		return nil, err
	}
	if _, ok := ds.(driver.StmtExecContext); !ok {
		_ = ds.Close()
		return nil, nil
	}
	if _, ok := ds.(driver.StmtQueryContext); !ok {
		_ = ds.Close()
		return nil, nil
	}
	cs := &cachedStmt{ds: ds}
	c.stmts[query] = cs
	return cs, nil
}

// ExecContext runs query on its prepared statement.
func (c *stmtCacheConn) ExecContext(ctx context.Context, query string, args []driver.NamedValue) (_ driver.Result, err error) {
	ctx, span := c.startStatement(ctx, query) // trace.go
	defer func() { endSpan(span, err) }()
	cs, err := c.stmt(ctx, query)
	if err != nil {
		return nil, err
	}
	if cs == nil {
		return c.inner.ExecContext(ctx, query, args)
	}
	return cs.ds.(driver.StmtExecContext).ExecContext(ctx, args)
}

// QueryContext runs query on its prepared statement; the statement is busy
// until the rows are closed.
func (c *stmtCacheConn) QueryContext(ctx context.Context, query string, args []driver.NamedValue) (driver.Rows, error) {
	// The statement's span ends when its rows are closed (trace.go).
	ctx, span := c.startStatement(ctx, query)
	cs, err := c.stmt(ctx, query)
	if err != nil {
		endSpan(span, err)
		return nil, err
	}
	var rows driver.Rows
	if cs == nil {
		rows, err = c.inner.QueryContext(ctx, query, args)
	} else {
		rows, err = cs.ds.(driver.StmtQueryContext).QueryContext(ctx, args)
	}
	if err != nil {
		endSpan(span, err)
		return nil, err
	}
	if cs == nil && span == nil {
		return rows, nil
	}
	if cs != nil {
		cs.busy = true
	}
	return &cachedRows{Rows: rows, stmt: cs, span: span}, nil
}

// Prepare prepares a statement the caller owns (not cached).
func (c *stmtCacheConn) Prepare(query string) (driver.Stmt, error) { return c.inner.Prepare(query) }

// PrepareContext prepares a statement the caller owns (not cached).
func (c *stmtCacheConn) PrepareContext(ctx context.Context, query string) (driver.Stmt, error) {
	return c.inner.PrepareContext(ctx, query)
}

// Begin starts a transaction.
//
// Deprecated: database/sql calls BeginTx.
func (c *stmtCacheConn) Begin() (driver.Tx, error) {
	return c.inner.BeginTx(context.Background(), driver.TxOptions{})
}

// BeginTx starts a transaction (IMMEDIATE on the writer, see dsn).
func (c *stmtCacheConn) BeginTx(ctx context.Context, opts driver.TxOptions) (driver.Tx, error) {
	return c.inner.BeginTx(ctx, opts)
}

// Ping checks the connection.
func (c *stmtCacheConn) Ping(ctx context.Context) error { return c.inner.Ping(ctx) }

// ResetSession is called before the connection is reused.
func (c *stmtCacheConn) ResetSession(ctx context.Context) error { return c.inner.ResetSession(ctx) }

// IsValid reports whether the connection may be reused.
func (c *stmtCacheConn) IsValid() bool { return c.inner.IsValid() }

// Close finalizes the cached statements, then closes the connection.
func (c *stmtCacheConn) Close() error {
	var errs []error
	for q, cs := range c.stmts {
		errs = append(errs, cs.ds.Close())
		delete(c.stmts, q)
	}
	errs = append(errs, c.inner.Close())
	return errors.Join(errs...)
}

// cachedRows frees its statement for the next use when closed, and ends
// the statement's span. Rows of a statement that ran unprepared are wrapped
// only for their span (stmt nil).
type cachedRows struct {
	driver.Rows
	stmt *cachedStmt
	span trace.Span // nil when not traced
}

// Close resets the statement (the driver keeps it prepared).
func (r *cachedRows) Close() error {
	err := r.Rows.Close()
	if r.stmt != nil {
		r.stmt.busy = false
	}
	endSpan(r.span, err)
	return err
}

// ColumnTypeScanType passes the driver's column scan type through.
func (r *cachedRows) ColumnTypeScanType(index int) reflect.Type {
	if t, ok := r.Rows.(driver.RowsColumnTypeScanType); ok {
		return t.ColumnTypeScanType(index)
	}
	return reflect.TypeFor[any]()
}

// ColumnTypeDatabaseTypeName passes the driver's declared column type
// through.
func (r *cachedRows) ColumnTypeDatabaseTypeName(index int) string {
	if t, ok := r.Rows.(driver.RowsColumnTypeDatabaseTypeName); ok {
		return t.ColumnTypeDatabaseTypeName(index)
	}
	return ""
}
