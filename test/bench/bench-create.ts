// The append of one plant's creation as the benches make it: a first event of a plant tagged 'bench'.
export const benchCreate = (owner: string, id: number, requestId: string, name = `plant ${id}`) => ({
  owner,
  plantId: BigInt(id),
  requestId,
  expectedVersion: 0,
  event: {
    type: 'PlantCreated',
    schemaVersion: 1,
    data: { id: String(id), name, tag: 'bench' },
    recordedAt: new Date(),
  },
})
