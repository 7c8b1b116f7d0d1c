package p
import ("context";"database/sql";"testing";"time"
 "github.com/jackc/pgx/v5/stdlib"; "github.com/jackc/pgx/v5")
const dsn = "postgres://postgres@127.0.0.1:5432/test?sslmode=disable"
func TestCost(t *testing.T){
 cfg,_ := pgx.ParseConfig(dsn)
 ctr := stdlib.GetConnector(*cfg)
 admin, _ := sql.Open("pgx", dsn)
 ctx := context.Background()
 n := 30
 t0 := time.Now()
 for i:=0;i<n;i++ { c,err := ctr.Connect(ctx); if err!=nil {t.Fatal(err)}; c.Close() }
 t.Logf("connect+close %v", time.Since(t0)/time.Duration(n))
 admin.Exec("drop schema if exists zzt cascade"); admin.Exec("create schema zzt")
 schema := "create table zzt.ledger(event_id text not null, user_id text not null, amount_cents integer not null); create table zzt.processed_events(event_id text primary key, processed_at bigint not null)"
 admin.Exec(schema)
 t0 = time.Now()
 for i:=0;i<n;i++ { if _,err:=admin.Exec("drop table zzt.ledger, zzt.processed_events"); err!=nil{t.Fatal(err)}; if _,err:=admin.Exec(schema);err!=nil{t.Fatal(err)} }
 t.Logf("drop+create %v", time.Since(t0)/time.Duration(n))
 t0 = time.Now()
 for i:=0;i<n;i++ { admin.Exec("insert into zzt.ledger values('a','b',1)"); if _,err:=admin.Exec("truncate zzt.ledger, zzt.processed_events restart identity"); err!=nil{t.Fatal(err)} }
 t.Logf("insert+truncate %v", time.Since(t0)/time.Duration(n))
 t0 = time.Now()
 for i:=0;i<n;i++ { admin.Exec("insert into zzt.ledger values('a','b',1)"); if _,err:=admin.Exec("delete from zzt.ledger; delete from zzt.processed_events"); err!=nil{t.Fatal(err)} }
 t.Logf("insert+delete %v", time.Since(t0)/time.Duration(n))
 t0 = time.Now()
 for i:=0;i<n;i++ { admin.Exec("select 1") }
 t.Logf("roundtrip %v", time.Since(t0)/time.Duration(n))
 admin.Exec("drop schema zzt cascade")
}
