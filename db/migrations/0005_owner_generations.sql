CREATE TABLE "owner_generations" (
	"owner" text PRIMARY KEY NOT NULL,
	"generation" bigint NOT NULL
);
