CREATE TABLE "projection_checkpoints" (
	"projection" text PRIMARY KEY NOT NULL,
	"position" bigint NOT NULL
);
--> statement-breakpoint
CREATE INDEX "events_transaction_position" ON "events" USING btree ("transaction_id","position");